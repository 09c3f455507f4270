"""Build helpers for splitcore's SConstruct: targets, tool checks, runners,
size table, benchmark collection. SCons puts site_scons/ on sys.path."""
