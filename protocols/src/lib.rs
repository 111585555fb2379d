//! Wire formats of mosaic: the worker protocol, handshake and versioning.
