/// A first-in first-out buffer: amortised O(1) push and pop, storage
/// reclaimed as the head advances (so a drained queue holds no memory).
struct FIFO<Element> {
    private var items: [Element?] = []
    private var head = 0

    var isEmpty: Bool { head == items.count }

    mutating func push(_ item: Element) { items.append(item) }

    var first: Element? { isEmpty ? nil : items[head] }

    mutating func pop() -> Element? {
        guard !isEmpty else { return nil }
        let item = items[head]
        items[head] = nil
        head += 1
        if head == items.count {
            items.removeAll(keepingCapacity: items.count <= 64)
            head = 0
        } else if head >= 1024, head * 2 >= items.count {
            items.removeFirst(head)
            head = 0
        }
        return item
    }
}
