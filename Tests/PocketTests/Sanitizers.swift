#if canImport(Glibc)
import Glibc
#endif

/// How much slower code runs under the sanitizer this test binary was built
/// with (`swift test --sanitize=...`, scripts/ci-sanitized.sh): 1 without one,
/// 3 under AddressSanitizer, 10 under ThreadSanitizer (every memory access
/// and every synchronisation is recorded). Found by the runtime's entry
/// point in the process, so the same source serves every build. Only for
/// the few generous "stays cheap" bounds; behaviour is asserted the same.
let sanitizerSlowdown: Int = {
    guard let process = dlopen(nil, RTLD_NOW) else { return 1 }
    if dlsym(process, "__tsan_init") != nil { return 10 }
    if dlsym(process, "__asan_init") != nil { return 3 }
    return 1
}()

/// How much more memory the process holds under the sanitizer it was built
/// with: 4 under ThreadSanitizer (shadow memory), 3 under AddressSanitizer
/// (redzones around every block, a 16 MB quarantine in scripts/ci-sanitized.sh),
/// else 1. For memory bounds that measure RSS of many small allocations.
let sanitizerMemoryFactor: Int = sanitizerSlowdown == 10 ? 4 : sanitizerSlowdown

/// The size of a test that moves a lot to show that something stays bounded
/// (a 1 GiB transfer): `n` in the plain run, where
/// the bound is asserted at full size, and `n / 4` under a sanitizer, whose
/// point is every memory access and lock of the same code, not the size.
/// The bounds these tests assert stay well below the scaled size.
func sanitizedScale(_ n: Int) -> Int { sanitizerSlowdown == 1 ? n : n / 4 }
