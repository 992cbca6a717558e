#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A value behind a pthread mutex: the one lock of the package (Pocket, the
/// `pocket` tool and the tests). `Synchronization.Mutex` is not used anywhere:
/// on Linux it parks on raw futex syscalls that ThreadSanitizer cannot see, so
/// every contended `Mutex` shows up as a data race under
/// `swift test --sanitize=thread` (CI failed on exactly that). ThreadSanitizer
/// intercepts pthread mutexes. `scripts/test.sh` rejects a new `Mutex`.
package final class Lock<Value>: @unchecked Sendable {
    // Invariant: `value` is only accessed while `mutex` is held.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    package init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    package func withLock<R, E: Error>(_ body: (inout Value) throws(E) -> R) throws(E) -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
