import Logging

#if canImport(Glibc)
    import Glibc
#endif

/// Process-wide settings the transport's limits rely on.
enum ProcessLimits {
    /// Raises the soft limit on open files (1024 under systemd) so `count` descriptors fit, as far
    /// as the hard limit allows; a connection past the soft limit would fail `accept` for everyone.
    static func raiseFileLimit(toHold count: Int, logger: Logger) {
        #if canImport(Glibc)
            var limit = rlimit()
            guard getrlimit(openFilesResource, &limit) == 0, limit.rlim_cur < rlim_t(count) else { return }
            let wanted = min(rlim_t(count), limit.rlim_max)
            limit.rlim_cur = wanted
            if setrlimit(openFilesResource, &limit) != 0 || wanted < rlim_t(count) {
                logger.warning(
                    "open-file limit is \(wanted), below the \(count) that STPD_MAX_CONNECTIONS needs; raise LimitNOFILE="
                )
            }
        #endif
    }

    /// glibc gives threads that contend for malloc arenas of their own (up to 8 per core) and
    /// keeps freed memory in each; two arenas keep what the allocator holds on to small.
    static func limitMallocArenas() {
        #if canImport(Glibc)
            _ = glibcMallopt(-8, 2)  // M_ARENA_MAX
        #endif
    }

    #if canImport(Glibc)
        /// glibc's mallopt (malloc.h is not part of the Glibc module).
        @_silgen_name("mallopt")
        private static func glibcMallopt(_ parameter: Int32, _ value: Int32) -> Int32

        private static var openFilesResource: __rlimit_resource_t { __rlimit_resource_t(RLIMIT_NOFILE.rawValue) }
    #endif
}
