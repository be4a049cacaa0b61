"""Ontology parsing: EFO's OBO release -> a term table with definitions and UMLS CUIs."""
