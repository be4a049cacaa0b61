"""The generated files of the repository, written from the declarations and the registries:
``config/schema.yaml`` (:mod:`.schema`) and the key tables of ``config/README.md``
(:mod:`.reference`); each module's ``--check`` is held by a test."""
