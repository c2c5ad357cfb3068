// The observation options are defined once, by the engine (ckvo.h): the Swift layer hands
// ObservingOptions' raw value to ckvo_observe as it is, so each Swift option must be its C bit.

import CKVOCore
import SwiftKVO
import Testing

@Suite(.needsLayout("its registrations")) struct ObservingOptionsTests {
    @Test func eachOptionIsItsEngineBit() {
        #expect(ObservingOptions.new.rawValue == CKVO_OPTION_NEW)
        #expect(ObservingOptions.old.rawValue == CKVO_OPTION_OLD)
        #expect(ObservingOptions.initial.rawValue == CKVO_OPTION_INITIAL)
        #expect(ObservingOptions.prior.rawValue == CKVO_OPTION_PRIOR)
    }

    @Test func noOptionIsTheEnginesRegistrationPromise() {
        // CKVO_OPTION_UNIQUE_CONTEXT is the Swift layer's own business (every box is a fresh
        // context): no public option may alias it.
        let all: ObservingOptions = [.new, .old, .initial, .prior]
        #expect(all.rawValue & CKVO_OPTION_UNIQUE_CONTEXT == 0)
        #expect(
            all.rawValue | CKVO_OPTION_UNIQUE_CONTEXT
                == CKVO_OPTION_NEW | CKVO_OPTION_OLD | CKVO_OPTION_INITIAL | CKVO_OPTION_PRIOR
                | CKVO_OPTION_UNIQUE_CONTEXT)
    }
}
