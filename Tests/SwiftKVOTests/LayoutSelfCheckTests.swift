// The layout readers' self-check (SPEC §2.24): it passes on this toolchain, a wrong expected
// shape makes it fail closed (every reader answers "unknown"), and with the check forced to fail
// (SWIFTKVO_RUNTIME_SELF_CHECK=fail, run here in a child process) registrations are decided from
// tables and public key path API alone: what those cannot decide is refused, naming the limit,
// and nothing traps or delivers a wrong value.

import IsolatedRunSupport
import Synchronization
import Testing

@testable import SwiftKVO

private final class TabledAccount: KeyValueObservable {
    let kvoRegistrar = KVORegistrar()
    @Observed var name = ""
    @Observed var wallet: TabledWallet?
    @Observed var savings = TabledWallet()
    static var observableKeyPaths: [String: AnyKeyPath] {
        ["name": \TabledAccount.name, "wallet": \TabledAccount.wallet, "savings": \TabledAccount.savings]
    }
}

private final class TabledWallet: KeyValueObservable {
    let kvoRegistrar = KVORegistrar()
    @Observed var balance = 0
    static var observableKeyPaths: [String: AnyKeyPath] { ["balance": \TabledWallet.balance] }
}

private final class UntabledAccount: KeyValueObservable {
    let kvoRegistrar = KVORegistrar()
    @Observed var name = ""
}

private class TabledBase: KeyValueObservable {
    let kvoRegistrar = KVORegistrar()
    @Observed var name = ""
    class var observableKeyPaths: [String: AnyKeyPath] { ["name": \TabledBase.name] }
}

private final class ShoutingAccount: TabledBase {
    override var name: String {
        get { super.name.uppercased() }
        set { super.name = newValue }
    }
}

@Suite struct LayoutSelfCheckTests {
    @Test func selfCheckPassesOnThisToolchain() {
        let check = RuntimeLayout.run(SelfCheckShapes.expected)
        #expect(check.passed, "failed: \(check.failures)")
        #expect(check.failures.isEmpty)
        if !LayoutSelfCheck.current.isForced {
            #expect(LayoutSelfCheck.current.passed)
            #expect(RuntimeLayout.isTrusted)
        }
    }

    @Test func selfCheckCoversTheShapesItPromises() {
        let names = SelfCheckShapes.expected.map(\.name)
        for required in [
            "an optional chain", "an override is detected", "a generic root", "a subscript", "\\.self",
            "a stored property is one link", "a two-link chain",
        ] {
            #expect(names.contains(required), "missing \(required)")
        }
    }

    @Test func aWrongExpectedShapeFailsClosed() {
        let wrong = [
            SelfCheckShapes.links("a stored property read as two links", \TabledAccount.name, count: 2, valueType: String.self),
            SelfCheckShapes.same("two properties read as one", \TabledAccount.name, \UntabledAccount.name),
            SelfCheckShapes.refused("a property read as refused", \TabledAccount.name),
        ]
        let check = RuntimeLayout.run(SelfCheckShapes.expected + wrong)
        #expect(!check.passed)
        #expect(check.failures == wrong.map(\.name))
        #expect(RuntimeLayout.limit(of: check).contains("did not pass SwiftKVO's self-check"))
        #expect(RuntimeLayout.limit(of: check).contains("a stored property read as two links"))
        // One wrong comparison among right ones is enough.
        #expect(!RuntimeLayout.run([SelfCheckShapes.expected[0], wrong[0]]).passed)
    }

    @Test func untrustedReadersAnswerUnknown() async throws {
        guard LayoutSelfCheck.current.isForced else {
            try await inForcedChild("untrustedReadersAnswerUnknown")
            return
        }
        #expect(!RuntimeLayout.isTrusted)
        #expect(LayoutSelfCheck.current.failures == ["forced by SWIFTKVO_RUNTIME_SELF_CHECK=fail"])
        guard case .unknown = KeyPathShape(of: \TabledAccount.name) else {
            Issue.record("a key path was read")
            return
        }
        #expect(KeyPathShape.singleLink(of: \TabledAccount.name) == nil)
        #expect(KeyPathShape.firstArgumentComponentID(of: \TabledAccount.name) == nil)
        #expect(ObservableDeclarations.of(TabledAccount.self).isEmpty)
        #expect(AccessorOverrides.exist(in: ShoutingAccount.self, of: TabledBase.self))
    }

    @Test func forcedFallbackDecidesTabledKeyPaths() async throws {
        guard LayoutSelfCheck.current.isForced else {
            try await inForcedChild("forcedFallbackDecidesTabledKeyPaths")
            return
        }
        let account = TabledAccount()
        let names = Mutex<[String]>([])
        let token = try account.observe(\.name, options: [.new]) { _, change in
            names.withLock { $0.append(change.newValue!) }
        }
        account.name = "Ada"
        #expect(names.withLock { $0 } == ["Ada"])
        token.invalidate()

        let balances = Mutex<[Int]>([])
        let chain = try account.observe(\.savings.balance, options: [.new]) { _, change in
            balances.withLock { $0.append(change.newValue!) }
        }
        account.savings.balance = 3
        account.savings = TabledWallet()
        #expect(balances.withLock { $0 } == [3, 0])
        chain.invalidate()
    }

    @Test func forcedFallbackRefusesWhatOnlyTheLayoutDecides() async throws {
        guard LayoutSelfCheck.current.isForced else {
            try await inForcedChild("forcedFallbackRefusesWhatOnlyTheLayoutDecides")
            return
        }
        let account = TabledAccount()
        for refused in [
            { _ = try account.observe(\.wallet?.balance) { _, _ in } },  // an optional chain
            { _ = try account.observe(\.wallet!.balance) { _, _ in } },  // a force-unwrap on nil: no trap
            { _ = try account.observe(\.name.count) { _, _ in } },  // not a table entry
            { _ = try ShoutingAccount().observe(\ShoutingAccount.name) { _, _ in } },  // an override's own key path
        ] as [() throws -> Void] {
            do {
                try refused()
                Issue.record("registered without the layout")
            } catch let error as KVOError {
                #expect(error == .unsupportedKeyPath)
                #expect(error.detail?.contains("did not pass SwiftKVO's self-check") == true, "\(error)")
            }
        }
        do {
            _ = try UntabledAccount().observe(\.name) { _, _ in }
            Issue.record("registered without a table")
        } catch {
            #expect(error.detail?.contains("add @KeyValueObservable, or list its observable properties") == true, "\(error)")
        }
    }

    @Test func forcedFallbackReadsAnInheritedPropertyThroughItsKeyPath() async throws {
        guard LayoutSelfCheck.current.isForced else {
            try await inForcedChild("forcedFallbackReadsAnInheritedPropertyThroughItsKeyPath")
            return
        }
        // Without the layout an override cannot be told: the value is read
        // through the key path, so it is the override's.
        let account: TabledBase = ShoutingAccount()
        let names = Mutex<[String]>([])
        let token = try account.observe(\TabledBase.name, options: [.new]) { _, change in
            names.withLock { $0.append(change.newValue!) }
        }
        account.name = "ada"
        #expect(names.withLock { $0 } == ["ADA"])
        token.invalidate()
    }

    /// Runs the test `name` again in a child process with the check forced to fail.
    private func inForcedChild(_ name: String) async throws {
        let child = try await runIsolated(
            filter: "SwiftKVOTests.LayoutSelfCheckTests/\(name)", name: name, seconds: 300,
            environment: [RuntimeLayout.forcingVariable: "fail"])
        #expect(child.status == 0, "the forced run failed:\n\(child.output)")
        #expect(child.output.contains("passed"), "\(child.output)")
    }

    @Test func anIsolatedTableIsFormedOnlyByAClosureOfExactlyThatType() {
        #expect(IsolatedTables.isIsolatedClosure("@A.B () -> T", returning: "T"))
        #expect(IsolatedTables.isIsolatedClosure("@A.B @Sendable () -> T", returning: "T"))
        #expect(!IsolatedTables.isIsolatedClosure("@Sendable () -> T", returning: "T"))
        #expect(!IsolatedTables.isIsolatedClosure("@A.B () -> @A.B () -> T", returning: "T"))
        #expect(!IsolatedTables.isIsolatedClosure("@isolated(any) () -> T", returning: "T"))
        #expect(!IsolatedTables.isIsolatedClosure("@A.B (Int) -> T", returning: "T"))
        #expect(!IsolatedTables.isIsolatedClosure("@A.B () async -> T", returning: "T"))
    }
}
