# Type stubs of the native module neff._native.
__version__: str
RUNTIME_VERSION: str
