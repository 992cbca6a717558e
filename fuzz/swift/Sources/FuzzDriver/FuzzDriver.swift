// libFuzzer's entry for the Swift targets.
//
// SwiftPM links an executable target with `main` defined as
// `<Target>_main` (so tests can import executables), which hides
// libFuzzer's own `main`. Each target therefore defines `<Target>_main`
// and hands its check to libFuzzer's driver, which parses the
// usual libFuzzer flags.

import FuzzAllocations

@_silgen_name("LLVMFuzzerRunDriver")
private func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
) -> Int32

/// The target's check; set once, before libFuzzer starts.
nonisolated(unsafe) private var currentCheck: (UnsafeRawBufferPointer) -> Void = { _ in }

/// Runs libFuzzer with the process's arguments and `check` as the target
/// (called with each input; a failed property traps).
public func runFuzzer(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                      _ check: @escaping (UnsafeRawBufferPointer) -> Void) -> Int32 {
    currentCheck = check
    var argc = argc
    var argv = argv
    return LLVMFuzzerRunDriver(&argc, &argv) { data, size in
        currentCheck(UnsafeRawBufferPointer(start: data, count: size))
        return 0
    }
}

@_silgen_name("__lsan_disable") private func lsanDisable()
@_silgen_name("__lsan_enable") private func lsanEnable()

/// Runs `body` with LeakSanitizer not tracking its allocations: for a
/// target's long-lived globals. Swift stores an indirect enum (like a
/// schema's node tree) as a pointer with its case in the spare bits, which
/// LeakSanitizer does not recognise as a pointer, so a global tree looks
/// leaked at exit.
public func ignoringLeaks<T>(_ body: () -> T) -> T {
    lsanDisable()
    defer { lsanEnable() }
    return body()
}

/// Runs `body`, the parsing of `inputBytes` bytes of the input, and traps
/// when it allocated more than `fixed + perByte × inputBytes` heap bytes in
/// all (frees not subtracted): what a server sends may cost memory in
/// proportion to its size, never more. `body` builds whatever it parses
/// into afresh, so a second call measures the same work: an excess is
/// reported only when it repeats, which leaves out the one-time
/// initialisation of a global on the first input.
/// With FUZZ_ALLOCATIONS_REPORT set, each measurement is printed to stderr
/// (`allocated WHAT BYTES INPUT`), to see how close the corpus comes.
public func allocationBounded<T>(_ what: String, inputBytes: Int, fixed: Int = 1 << 20, perByte: Int = 1024,
                                 _ body: () -> T) -> T {
    let bound = fixed + perByte * inputBytes
    fuzz_allocations_begin()
    let result = body()
    let first = fuzz_allocations_end()
    fuzz_allocations_report(what, first, inputBytes)
    if first <= bound { return result }
    fuzz_allocations_begin()
    let again = body()
    let second = fuzz_allocations_end()
    if second > bound {
        fatalError("\(what): \(second) bytes allocated for \(inputBytes) bytes of input (bound \(bound))")
    }
    return again
}
