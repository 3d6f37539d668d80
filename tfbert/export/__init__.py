"""Export: SavedModel (preprocessor, encoder, task models), TF Hub, TFLite, op check.

Import the submodules directly, e.g. `from tfbert.export.preprocessor import
export_preprocessor`; nothing is imported here, so `import tfbert.export`
stays cheap and free of side effects.
"""
