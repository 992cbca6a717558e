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
///
/// The value and the mutex share one allocation (a `ManagedBuffer`: the
/// value as its header, the mutex as its one element); copies of a `Lock`
/// share it, as references to a class would.
package struct Lock<Value>: @unchecked Sendable {
    // Invariant: the header (the value) is only accessed while the element
    // (the mutex) is held.
    private final class Buffer: ManagedBuffer<Value, pthread_mutex_t> {
        deinit {
            _ = withUnsafeMutablePointerToElements { pthread_mutex_destroy($0) }
        }
    }

    private let buffer: Buffer

    package init(_ value: Value) {
        self.init(making: { value })
    }

    /// A lock whose value `make` builds in place (a value passed in is
    /// copied into the lock's storage, and the original destroyed: for a
    /// generic value, two calls through its value witnesses).
    package init(making make: () -> Value) {
        let made = Buffer.create(minimumCapacity: 1) { _ in make() }
        buffer = unsafeDowncast(made, to: Buffer.self)
        buffer.withUnsafeMutablePointerToElements { mutex in
            mutex.initialize(to: pthread_mutex_t())
            _ = pthread_mutex_init(mutex, nil)
        }
    }

    package func withLock<R, E: Error>(_ body: (inout Value) throws(E) -> R) throws(E) -> R {
        try buffer.withUnsafeMutablePointers { (value, mutex) throws(E) -> R in
            pthread_mutex_lock(mutex)
            defer { pthread_mutex_unlock(mutex) }
            return try body(&value.pointee)
        }
    }
}
