"""Named entity recognition with MedCAT v2, restricted to UMLS types T047 and T048."""

import os

# No network at import or load time: MedCAT's PyPI version check is off for every job.
os.environ.setdefault("MEDCAT_DISABLE_VERSION_CHECK", "true")
