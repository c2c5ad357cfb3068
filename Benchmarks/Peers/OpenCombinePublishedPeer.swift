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

struct OpenCombinePublishedPeer: Peer {
    let id = "opencombine-published"
    let title = "OpenCombine @Published"

    final class Model {
        @Published var value = 0
    }

    static func observe(_ model: Model, observer: BenchObserver) -> AnyCancellable {
        model.$value.sink { [observer] _ in observerDidChange(observer) }
    }

    final class FanOut: Fixture, @unchecked Sendable {
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

    final class ManySubjects: Fixture, @unchecked Sendable {
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

    final class Churn: Fixture, @unchecked Sendable {
        let fanOut: FanOut
        let observer = BenchObserver()
        let unitsPerIteration = 1
        var unitsAreCallbacks: Bool { false }
        init(observers: Int) { fanOut = FanOut(observers: observers) }
        func run(_ iterations: Int) {
            let model = fanOut.model
            for _ in 0..<iterations {
                let cancellable = OpenCombinePublishedPeer.observe(model, observer: observer)
                cancellable.cancel()
            }
        }
        func tearDown() { fanOut.tearDown() }
    }

    func makeFanOut(observers: Int) -> (any Fixture)? { FanOut(observers: observers) }
    func makeManySubjects(subjects: Int) -> (any Fixture)? { ManySubjects(subjects: subjects) }
    func makeNoObserverSetter() -> (any Fixture)? { FanOut(observers: 0) }
    func makeChurn(observers: Int, concurrentDispatcher: Bool) -> (any Fixture)? {
        concurrentDispatcher ? nil : Churn(observers: observers)
    }

    func measureMemory(observations: Int, perObject: Bool) -> MemorySample? {
        let observers = (0..<observations).map { _ in BenchObserver() }
        let models = (0..<(perObject ? observations : 1)).map { _ in Model() }
        var cancellables: [AnyCancellable] = []
        cancellables.reserveCapacity(observations)
        let sample = measureHeap(observations: observations) {
            for i in 0..<observations {
                cancellables.append(
                    OpenCombinePublishedPeer.observe(models[perObject ? i : 0], observer: observers[i]))
            }
        } release: {}
        _ = cbench_take_count()
        cancellables.removeAll()
        return sample
    }
}
