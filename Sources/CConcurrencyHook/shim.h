// The Swift runtime's hook for enqueueing global (unstructured) jobs (swift/Runtime/ConcurrencyHooks.def).
// Declared here so that the link resolves it: libswift_Concurrency.so exports it, and in a static
// executable (--static-swift-stdlib) it is a hidden symbol of the same link, which dlsym cannot find.
extern void *swift_task_enqueueGlobal_hook;

/// Where the hook is kept (a function, because Swift 6 refuses a mutable C global by name).
static inline void **motiond_enqueue_global_hook_slot(void) { return &swift_task_enqueueGlobal_hook; }
