/// polkit's authority on the bus, asked whether a bus client may do an action
/// (`org.freedesktop.PolicyKit1.Authority.CheckAuthorization`), without waiting for its answer.
struct PolkitAuthority {
    /// What polkit said.
    enum Verdict: Equatable {
        case allowed
        case refused
        /// There is no polkit on this bus: upstream allows every claim then, and so do we.
        case absent
        /// polkit was there and answered with an error.
        case failed(name: String, message: String)
    }

    let bus: Bus

    /// Asks whether the bus client `sender` (a unique bus name) may do `action`; `answer` gets the
    /// verdict from the bus's `process`. No interaction is asked for: a sensor is no reason for a prompt.
    func check(_ sender: String, may action: String, answer: @escaping (Verdict) -> Void) throws(BusError) {
        let check = try bus.newMethodCall(
            destination: "org.freedesktop.PolicyKit1", path: "/org/freedesktop/PolicyKit1/Authority",
            interface: "org.freedesktop.PolicyKit1.Authority", member: "CheckAuthorization")
        // CheckAuthorization(subject (sa{sv}), action_id s, details a{ss}, flags u, cancellation_id s);
        // the subject is the caller's bus name.
        try check.append(container: "r", of: "sa{sv}") { subject throws(BusError) in
            try subject.append("system-bus-name")
            try subject.append(container: "a", of: "{sv}") { details throws(BusError) in
                try details.append(container: "e", of: "sv") { entry throws(BusError) in
                    try entry.append("name")
                    try entry.append(container: "v", of: "s") { value throws(BusError) in try value.append(sender) }
                }
            }
        }
        try check.append(action)
        try check.append(container: "a", of: "{ss}")
        try check.append(UInt32(0))
        try check.append("")
        try bus.call(check) { reply in answer(Self.verdict(of: reply)) }
    }

    /// The verdict a reply to `CheckAuthorization` carries: `(bba{ss})`, is authorized first.
    static func verdict(of reply: BusMessage) -> Verdict {
        if let error = reply.error {
            let noPolkit = ["org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner"]
            return noPolkit.contains(error.name) ? .absent : .failed(name: error.name, message: error.message)
        }
        do {
            try reply.enter(container: "r", of: "bba{ss}")
            return try reply.readBool() ? .allowed : .refused
        } catch {
            return .failed(name: "org.freedesktop.DBus.Error.InvalidSignature", message: "\(error)")
        }
    }
}
