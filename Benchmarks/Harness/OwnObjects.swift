// OwnObjects.swift — the contention workload's common service shape: each
// thread changes its own object, and the observers are shared (the same
// observer objects, callbacks and contexts observe every thread's object).
// What can then limit scaling is the observation machinery's shared state,
// not a value two threads store to.

/// A fixture whose threads each work on their own object; `run(_:)` is thread 0's.
protocol ThreadIndexedFixture: Fixture {
    /// Performs `iterations` iterations on thread `thread`'s own object.
    func run(_ iterations: Int, thread: Int)
}

extension ThreadIndexedFixture {
    func run(_ iterations: Int) { run(iterations, thread: 0) }
}

enum OwnObjects {
    /// Fixtures make this many objects per thread and use the first of each group, so two
    /// threads' objects (allocated one after another) never share a cache line.
    static let spacing = 8

    /// Index of thread `thread`'s object among `threads * spacing` objects.
    static func index(ofThread thread: Int) -> Int { thread * spacing }
}
