/// motiond's release: the one place its version number is written. The Makefile and the Debian
/// package (`make deb`, debian/changelog made from it) read it from this file.
public enum Release {
    /// The version of this release.
    public static let version = "0.2.0"
}
