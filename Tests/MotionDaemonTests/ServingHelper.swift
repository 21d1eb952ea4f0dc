import MotionDaemon

extension MotionServer {
    /// Runs `body` with the server started, then stops it, whether `body` threw or not (a test's
    /// `defer` cannot wait for the stop).
    func whileServing(_ body: () async throws -> Void) async throws {
        let outcome: Result<Void, any Error>
        do {
            try await body()
            outcome = .success(())
        } catch {
            outcome = .failure(error)
        }
        try await stop()
        try outcome.get()
    }
}
