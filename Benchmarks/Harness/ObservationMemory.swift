// ObservationMemory.swift — the memory workload's usual shape: the observer
// objects, the subjects and an array for the handles exist before the
// measurement, which covers only the registrations (and the handles they
// return); the observations end afterwards, outside it.

/// Registers `observations` observations with `observe` and reports the heap growth
/// (`measureHeap`). Each observation has its own observer (`makeObserver()`); all observe
/// one subject (`perObject` false) or each its own (`perObject` true, `makeSubject()`
/// each). What `observe` returns is kept in an array reserved beforehand, so only the
/// handle itself counts (a `Void` handle costs nothing). `release` is then given the
/// handles, observers and subjects to end the observations, outside the measurement.
func measureObservations<Observer, Subject, Handle>(
    _ observations: Int, perObject: Bool,
    observer makeObserver: () -> Observer,
    subject makeSubject: () -> Subject,
    observe: (_ subject: Subject, _ observer: Observer) -> Handle,
    release: (_ handles: [Handle], _ observers: [Observer], _ subjects: [Subject]) -> Void
) -> MemorySample {
    let observers = (0..<observations).map { _ in makeObserver() }
    let subjects = (0..<(perObject ? observations : 1)).map { _ in makeSubject() }
    var handles: [Handle] = []
    handles.reserveCapacity(observations)
    return measureHeap(observations: observations) {
        for i in 0..<observations {
            handles.append(observe(subjects[perObject ? i : 0], observers[i]))
        }
    } release: {
        release(handles, observers, subjects)
    }
}
