// ObservationTrackingPeer.swift — Swift's Observation module: an @Observable
// model, and observers that call withObservationTracking and re-arm it from
// onChange, the public way to observe every change continuously (tracking is
// one-shot). onChange runs in willSet, on the mutating thread.
//
// An @Observable setter does not notify when the new value equals the old one
// (Equatable values are compared), so the fixtures set a value that always
// differs: a per-fixture sequence number.
//
// Not measured under contention or churn: mutating an @Observable property
// from two threads is a data race on its storage, and a tracking cannot be
// cancelled through the public API (it ends only at the next change).

import CBenchFloor
import Observation

struct ObservationTrackingPeer: FixtureFactories {
    let id = "observation"
    let title = "Observation, withObservationTracking re-armed"
    let fanOutIsThreadSafe = false

    @Observable
    final class Model: @unchecked Sendable {
        var value = 0
    }

    /// One continuous observer: arms a tracking of `model.value` and re-arms it on each change.
    /// The model's registrar holds the onChange closure, which holds the tracker, which holds
    /// the model: `stop` ends the re-arming so the next change breaks that cycle.
    final class Tracker: @unchecked Sendable {
        let model: Model
        let observer: BenchObserver
        var active = true
        init(model: Model, observer: BenchObserver) {
            self.model = model
            self.observer = observer
            arm()
        }
        func arm() {
            withObservationTracking {
                _ = model.value
            } onChange: { [self] in
                observerDidChange(observer)
                if active { arm() }
            }
        }
    }

    /// Stops every tracker and fires one last change on each model, freeing the trackings.
    static func stop(_ trackers: [Tracker], models: [Model]) {
        for tracker in trackers { tracker.active = false }
        for model in models { model.value = -1 }
        _ = cbench_take_count()
    }

    final class FanOut: FanOutFixture, @unchecked Sendable {
        let model = Model()
        var trackers: [Tracker] = []
        let observers: Int
        let unitsPerIteration: Int
        var unitsAreCallbacks: Bool { observers > 0 }
        init(observers: Int) {
            self.observers = observers
            unitsPerIteration = max(observers, 1)
            for _ in 0..<observers { trackers.append(Tracker(model: model, observer: BenchObserver())) }
        }
        var sequence = 0
        func run(_ iterations: Int) {
            for _ in 0..<iterations {
                sequence &+= 1
                model.value = sequence
            }
        }
        func tearDown() { ObservationTrackingPeer.stop(trackers, models: [model]) }
    }

    final class ManySubjects: ManySubjectsFixture, @unchecked Sendable {
        let models: [Model]
        var trackers: [Tracker] = []
        var cursor = 0
        var sequence = 0
        let unitsPerIteration = 1
        init(subjects count: Int) {
            models = (0..<count).map { _ in Model() }
            for model in models { trackers.append(Tracker(model: model, observer: BenchObserver())) }
        }
        func run(_ iterations: Int) {
            var index = cursor
            for _ in 0..<iterations {
                sequence &+= 1
                models[index].value = sequence
                index += 1
                if index == models.count { index = 0 }
            }
            cursor = index
        }
        func tearDown() { ObservationTrackingPeer.stop(trackers, models: models) }
    }

    func measureMemory(observations: Int, perObject: Bool) -> MemorySample? {
        measureObservations(observations, perObject: perObject, observer: BenchObserver.init, subject: Model.init) {
            Tracker(model: $0, observer: $1)
        } release: { trackers, _, models in
            ObservationTrackingPeer.stop(trackers, models: models)
        }
    }
}

// MARK: - Sparse observation

extension ObservationTrackingPeer.Model: SparseSubject {}

extension ObservationTrackingPeer {
    /// The observed models keep one re-arming tracker each; the unobserved models' sets
    /// still go through the registrar.
    func makeSparse(subjects: Int, observed: Bool) -> (any Fixture)? {
        SparseFixture<Model>(subjects: subjects, observed: observed) { model in
            Tracker(model: model, observer: BenchObserver())
        } release: { tracker in
            let tracker = tracker as! Tracker
            ObservationTrackingPeer.stop([tracker], models: [tracker.model])
        }
    }
}
