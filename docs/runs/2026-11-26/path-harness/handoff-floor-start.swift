import Glibc
nonisolated func startLoop(_ loop: Loop) {
    var thread = pthread_t()
    let arg = Unmanaged.passRetained(loop).toOpaque()
    pthread_create(&thread, nil, { arg in Unmanaged<Loop>.fromOpaque(arg!).takeUnretainedValue().run(); return nil }, arg)
}
