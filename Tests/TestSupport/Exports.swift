// The loopback server and seeded generator live in a library the benchmark shares; tests keep
// importing TestSupport alone.
@_exported import LoopbackFixtures
