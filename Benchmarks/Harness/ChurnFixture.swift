// ChurnFixture.swift — the churn workload's fixture, the same for every peer:
// a key that already has its observers, a loop of observe + unobserve pairs on
// it, and for `churn+dispatcher` a thread changing the key non-stop meanwhile.
//
// A peer supplies what is its library's: the fan-out fixture whose observers
// sit on the key, the pair (a `ChurnPair` in the peer's file, making the
// observe and unobserve calls its users make) and the dispatcher's change.
// The pair loop is built in the generic initializer, where the pair's type is
// known, so it is specialized for that type: the measured loop calls
// `observeAndUnobserve` directly (one closure call per `run`, none per pair).

/// One observe + unobserve pair on the churned key, as a peer's user writes it.
protocol ChurnPair {
    /// Observes the key, then ends that observation. Called once per iteration.
    func observeAndUnobserve()
    /// Ends whatever the pair keeps registered between pairs. Called once, after the
    /// dispatcher stopped and before the fan-out fixture is torn down.
    func tearDown()
}

extension ChurnPair {
    func tearDown() {}
}

/// A key with observers (a fan-out fixture, built and never run); an iteration is
/// one `observeAndUnobserve()` of the pair. With a concurrent dispatcher, a `BackgroundLoop`
/// changes the key non-stop from creation to tearDown.
final class ChurnFixture: Fixture, @unchecked Sendable {
    let unitsPerIteration = 1
    var unitsAreCallbacks: Bool { false }
    private let fanOut: any Fixture
    private let pair: any ChurnPair
    private let dispatcher: BackgroundLoop?
    /// `iterations` pairs, specialized for the pair's type.
    private let pairs: (Int) -> Void

    /// Churn without a dispatcher, for peers that cannot be changed while observed elsewhere.
    convenience init<Pair: ChurnPair>(on fanOut: some Fixture, pair: Pair) {
        self.init(fanOut, pair, change: nil)
    }

    /// With `concurrentDispatcher`, starts a `BackgroundLoop` running `change` (the key's
    /// change, as the peer's users write it) once `fanOut` and `pair` are ready.
    convenience init<Pair: ChurnPair>(
        on fanOut: some Fixture, pair: Pair, concurrentDispatcher: Bool,
        change: @escaping @Sendable () -> Void
    ) {
        self.init(fanOut, pair, change: concurrentDispatcher ? change : nil)
    }

    private init<Pair: ChurnPair>(_ fanOut: some Fixture, _ pair: Pair, change: (@Sendable () -> Void)?) {
        self.fanOut = fanOut
        self.pair = pair
        pairs = { iterations in
            for _ in 0..<iterations { pair.observeAndUnobserve() }
        }
        dispatcher = change.map { BackgroundLoop($0) }
    }

    func run(_ iterations: Int) { pairs(iterations) }

    func tearDown() {
        dispatcher?.stop()
        pair.tearDown()
        fanOut.tearDown()
    }
}
