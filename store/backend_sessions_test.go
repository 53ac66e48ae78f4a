package store_test

// The BackendSessions contract, on memory, Redis and Redis Cluster.
