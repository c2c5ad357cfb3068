// OpenCombinePublishedPeer.swift — OpenCombine's @Published: each observer
// is `model.$value.sink { … }` kept alive by its AnyCancellable; a change is
// a plain property set (published in willSet). A sink receives the current
// value when it subscribes, so setup discards those callbacks, and each churn
// pair includes one.
//
// Not measured under contention or with a concurrent dispatcher: @Published
// is not documented as thread-safe, and its property storage is not.

import CBenchFloor
import OpenCombine

struct OpenCombinePublishedPeer: FixtureFactories {
    let id = "opencombine-published"
    let title = "OpenCombine @Published"
    let fanOutIsThreadSafe = false

    final class Model {
        @Published var value = 0
    }

    static func observe(_ model: Model, observer: BenchObserver) -> AnyCancellable {
        model.$value.sink { [observer] _ in observerDidChange(observer) }
    }

    final class FanOut: FanOutFixture, @unchecked Sendable {
        let model = Model()
        var cancellables: [AnyCancellable] = []
        let observers: Int
        let unitsPerIteration: Int
        var unitsAreCallbacks: Bool { observers > 0 }
        init(observers: Int) {
            self.observers = observers
            unitsPerIteration = max(observers, 1)
            for _ in 0..<observers {
                cancellables.append(OpenCombinePublishedPeer.observe(model, observer: BenchObserver()))
            }
            _ = cbench_take_count()
        }
        func run(_ iterations: Int) {
            for i in 0..<iterations { model.value = i }
        }
        func tearDown() { cancellables.removeAll() }
    }

    final class ManySubjects: ManySubjectsFixture, @unchecked Sendable {
        let models: [Model]
        var cancellables: [AnyCancellable] = []
        var cursor = 0
        let unitsPerIteration = 1
        init(subjects count: Int) {
            models = (0..<count).map { _ in Model() }
            for model in models {
                cancellables.append(OpenCombinePublishedPeer.observe(model, observer: BenchObserver()))
            }
            _ = cbench_take_count()
        }
        func run(_ iterations: Int) {
            var index = cursor
            for i in 0..<iterations {
                models[index].value = i
                index += 1
                if index == models.count { index = 0 }
            }
            cursor = index
        }
        func tearDown() { cancellables.removeAll() }
    }

    /// One churn pair: sink on the fan-out's model (receiving its current value), then cancel.
    struct Churn: ChurnPair {
        let model: Model
        let observer = BenchObserver()
        func observeAndUnobserve() {
            let cancellable = OpenCombinePublishedPeer.observe(model, observer: observer)
            cancellable.cancel()
        }
    }

    func makeChurn(observers: Int, concurrentDispatcher: Bool) -> (any Fixture)? {
        if concurrentDispatcher { return nil }
        let fanOut = FanOut(observers: observers)
        return ChurnFixture(on: fanOut, pair: Churn(model: fanOut.model))
    }

    func measureMemory(observations: Int, perObject: Bool) -> MemorySample? {
        measureObservations(observations, perObject: perObject, observer: BenchObserver.init, subject: Model.init) {
            OpenCombinePublishedPeer.observe($0, observer: $1)
        } release: { _, _, _ in
            // The sinks' first values; freeing the cancellables afterwards cancels them.
            _ = cbench_take_count()
        }
    }
}

// MARK: - Sparse observation

extension OpenCombinePublishedPeer.Model: SparseSubject {}

extension OpenCombinePublishedPeer {
    /// An unobserved model's set still sends through its publisher, which has no subscriber.
    func makeSparse(subjects: Int, observed: Bool) -> (any Fixture)? {
        SparseFixture<Model>(subjects: subjects, observed: observed) { model in
            OpenCombinePublishedPeer.observe(model, observer: BenchObserver())
        }
    }
}
