// SoakRandom.swift — a small deterministic generator, one per worker.
//
// Which operation a worker does next comes from its own generator seeded from
// --seed and the worker's name, so a run's mix of operations can be repeated
// (the interleaving of threads cannot).

struct SoakRandom: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64, stream: UInt64) {
        state = seed ^ (stream &* 0xD1B5_4A32_D192_ED03)
    }

    /// SplitMix64.
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A number in `0..<bound`.
    mutating func below(_ bound: Int) -> Int {
        Int(next() % UInt64(bound))
    }

    /// True with probability `percent` / 100.
    mutating func percent(_ percent: Int) -> Bool {
        below(100) < percent
    }
}
