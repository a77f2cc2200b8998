"""A complete zoo plugin package (used by zoo's own tests): every kind of plugin, written
against zoo's public API only."""
