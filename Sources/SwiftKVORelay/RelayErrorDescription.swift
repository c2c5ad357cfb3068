#if Relay
import NIOCore
import NIOSSL
import PostgresNIO

/// What an error from the broker means, for a log line an operator can act
/// on. PostgresNIO's `PSQLError` prints only a generic sentence (it cannot
/// know which of its fields hold data); this says what happened — the server
/// closed the connection, authentication was refused, TLS failed, a statement
/// failed with SQLSTATE … — from the error's code and its SQLSTATE and
/// severity fields. Never from the server's message text, its detail or the
/// query, which can carry values; never credentials.
enum RelayErrorDescription {
    static func describe(_ error: any Error) -> String {
        switch error {
        case let error as PSQLError: describe(error)
        case let error as PostgresTransportError:
            switch error {
            case .connectionClosed: "the connection was closed (by the server, or lost)"
            }
        case let error as RelayStateTableError: error.description
        case is NIOSSLError: "TLS failed (\(String(describing: error)))"
        case let error as IOError: "network error: \(error.description)"
        case is CancellationError: "cancelled"
        default: String(describing: type(of: error))
        }
    }

    private static func describe(_ error: PSQLError) -> String {
        switch error.code {
        case .server:
            let state = error.serverInfo?[.sqlState] ?? "?????"
            let severity = error.serverInfo?[.severity] ?? "ERROR"
            return "\(what(sqlState: state)) (\(severity), SQLSTATE \(state)\(name(sqlState: state).map { " \($0)" } ?? ""))"
        case .serverClosedConnection: return "the server closed the connection" + underlying(error)
        case .uncleanShutdown: return "the connection was lost without a proper shutdown" + underlying(error)
        case .connectionError: return "could not connect" + underlying(error)
        case .clientClosedConnection: return "the connection was closed by this process"
        case .sslUnsupported: return "TLS failed: the server does not support TLS (PGSSLMODE=require)"
        case .failedToAddSSLHandler: return "TLS failed: could not set up TLS" + underlying(error)
        case .receivedUnencryptedDataAfterSSLRequest: return "TLS failed: the server answered unencrypted"
        case .unsupportedAuthMechanism: return "authentication refused: the server asks for a method PostgresNIO does not support"
        case .authMechanismRequiresPassword: return "authentication refused: the server requires a password and none is set (PGPASSWORD)"
        case .saslError: return "authentication failed (SASL)" + underlying(error)
        case .queryCancelled: return "the statement was cancelled"
        case .tooManyParameters: return "a statement has too many parameters"
        case .listenFailed: return "LISTEN failed" + underlying(error)
        default: return "PostgreSQL client error \(error.code)" + underlying(error)
        }
    }

    /// The underlying error, described, after a colon; nothing if there is none.
    private static func underlying(_ error: PSQLError) -> String {
        guard let underlying = error.underlying else { return "" }
        return ": " + describe(underlying)
    }

    /// What a SQLSTATE's class means.
    private static func what(sqlState state: String) -> String {
        switch state.prefix(2) {
        case "28": "authentication refused by the server"
        case "57": state == "57014" ? "the statement was cancelled by the server" : "the server is shutting down or ended the session"
        case "08": "the connection failed"
        case "3D": "the database does not exist"
        case "42": state == "42501" ? "permission denied" : "a statement failed (syntax or access rule)"
        case "53": "the server is out of resources"
        case "54": "a program limit was exceeded"
        case "25", "40": "a transaction failed"
        default: "a statement failed"
        }
    }

    /// The condition name of the SQLSTATEs an operator meets most here.
    private static func name(sqlState state: String) -> String? {
        switch state {
        case "28000": "invalid_authorization_specification"
        case "28P01": "invalid_password"
        case "57P01": "admin_shutdown"
        case "57P02": "crash_shutdown"
        case "57P03": "cannot_connect_now"
        case "57014": "query_canceled"
        case "3D000": "invalid_catalog_name"
        case "42501": "insufficient_privilege"
        case "42P01": "undefined_table"
        case "42703": "undefined_column"
        case "53300": "too_many_connections"
        case "54000": "program_limit_exceeded"
        case "08006": "connection_failure"
        default: nil
        }
    }
}
#endif
