"""JSON Schemas of awf's record files and of the values file; they ship with the package."""
