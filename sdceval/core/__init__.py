"""The core layer: errors, validation, hierarchies, schema, data sets, releases,
measurements and the registries.  Imports nothing from the layers above (SPEC §1)."""
