import CHTTPEngine
import XCTest

// Shared helpers for the pure-parser tests: one way to cut input into pieces
// (FeedPlan), and feeders for the head parser and the chunked decoder that
// follow a plan the way the engine feeds network reads.

func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }

/// The negated code the parser returns for `e`.
func code(_ e: pk_error) -> Int32 { -Int32(e.rawValue) }

func resultName(_ r: Int) -> String {
  if r == Int(PK_PARSE_INCOMPLETE) { return "incomplete" }
  if r < 0 { return String(cString: pk_error_name(Int32(r))) }
  return "\(r)"
}

func defaultLimits() -> pk_parse_limits {
  var l = pk_parse_limits()
  pk_parse_limits_init(&l)
  return l
}

/// A plan is the list of piece lengths the input is fed in.
enum FeedPlan {
  /// Whole; byte by byte; and split in two at every offset. For big inputs the
  /// two-piece splits are sampled (evenly, plus the first and last 8 offsets)
  /// so that a test stays well under a second.
  static func all(count n: Int, maxSplits: Int = 2048) -> [[Int]] {
    var plans: [[Int]] = [[n]]
    guard n > 1 else { return plans }
    plans.append(Array(repeating: 1, count: n))
    var cuts = Set(stride(from: 1, to: n, by: max(1, (n - 1) / maxSplits)))
    for k in 1...min(8, n - 1) {
      cuts.insert(k)
      cuts.insert(n - k)
    }
    for k in cuts.sorted() { plans.append([k, n - k]) }
    return plans
  }
}

// MARK: - head

struct HeadField: Equatable {
  var name: [UInt8]
  var value: [UInt8]
  var nameOffset: Int
  var valueOffset: Int

  var nameString: String { String(decoding: name, as: UTF8.self) }
  var valueString: String { String(decoding: value, as: UTF8.self) }
}

struct HeadOutcome: Equatable, CustomStringConvertible {
  var result: Int32
  var status: Int32 = 0
  var minorVersion: Int32 = 0
  var reason: [UInt8] = []
  var reasonOffset = 0
  var fields: [HeadField] = []
  var raw: [UInt8] = []  // the head bytes after unfolding

  var reasonString: String { String(decoding: reason, as: UTF8.self) }
  func value(_ n: String) -> String? {
    fields.first { $0.nameString.lowercased() == n.lowercased() }?.valueString
  }
  var description: String {
    "HeadOutcome(\(resultName(Int(result))), status \(status), 1.\(minorVersion), "
      + "reason \(reasonString.debugDescription), \(fields.map { "\($0.nameString)=\($0.valueString)" }))"
  }
}

/// Feeds `input` to pk_parse_response_head following `plan`: the buffer grows
/// by each piece (bytes beyond `len` are garbage, as in a read buffer), and
/// each call gets the previous length as the resume hint. Stops at the first
/// result that is not "incomplete".
func parseHead(_ input: [UInt8], plan: [Int], limits: pk_parse_limits = defaultLimits(),
               capacity: Int = 256) -> HeadOutcome {
  let buf = UnsafeMutablePointer<CChar>.allocate(capacity: max(input.count, 1))
  buf.initialize(repeating: CChar(bitPattern: 0xA5), count: max(input.count, 1))
  let hdrs = UnsafeMutablePointer<pk_header>.allocate(capacity: max(capacity, 1))
  defer {
    buf.deallocate()
    hdrs.deallocate()
  }
  var lim = limits
  var len = 0
  var last = 0
  var r = PK_PARSE_INCOMPLETE
  var head = pk_response_head()
  for piece in plan {
    for i in len..<(len + piece) { buf[i] = CChar(bitPattern: input[i]) }
    len += piece
    head = pk_response_head()
    head.headers = hdrs
    head.num_headers = capacity
    r = pk_parse_response_head(buf, len, last, &head, &lim)
    if r != PK_PARSE_INCOMPLETE { break }
    last = len
  }
  return outcome(r, head, buf)
}

func outcome(_ r: Int32, _ head: pk_response_head, _ buf: UnsafePointer<CChar>) -> HeadOutcome {
  guard r > 0 else { return HeadOutcome(result: r) }
  func copy(_ p: UnsafePointer<CChar>, _ n: Int) -> [UInt8] {
    Array(UnsafeRawBufferPointer(start: p, count: n).bindMemory(to: UInt8.self))
  }
  var o = HeadOutcome(result: r, status: head.status, minorVersion: head.minor_version)
  o.reason = copy(head.reason, head.reason_len)
  o.reasonOffset = head.reason - buf
  for i in 0..<head.num_headers {
    let h = head.headers[i]
    o.fields.append(HeadField(name: copy(h.name, h.name_len), value: copy(h.value, h.value_len),
                              nameOffset: h.name - buf, valueOffset: h.value - buf))
  }
  o.raw = copy(buf, Int(r))
  return o
}

/// Parses `input` with every plan and asserts that all give the same outcome
/// as feeding it whole; returns that outcome.
@discardableResult
func assertHead(_ input: [UInt8], limits: pk_parse_limits = defaultLimits(), capacity: Int = 256,
                maxSplits: Int = 2048, file: StaticString = #filePath, line: UInt = #line) -> HeadOutcome {
  let plans = FeedPlan.all(count: input.count, maxSplits: maxSplits)
  let whole = parseHead(input, plan: plans[0], limits: limits, capacity: capacity)
  for plan in plans.dropFirst() {
    let o = parseHead(input, plan: plan, limits: limits, capacity: capacity)
    if o != whole {
      XCTFail("plan \(plan.count == input.count ? "byte by byte" : "\(plan)") gave \(o), whole gave \(whole)",
              file: file, line: line)
      break
    }
  }
  return whole
}

@discardableResult
func assertHead(_ text: String, limits: pk_parse_limits = defaultLimits(), capacity: Int = 256,
                file: StaticString = #filePath, line: UInt = #line) -> HeadOutcome {
  assertHead(bytes(text), limits: limits, capacity: capacity, file: file, line: line)
}

/// Asserts that `input` fails with `error`, whole and in every split.
func assertHeadError(_ input: [UInt8], _ error: pk_error, limits: pk_parse_limits = defaultLimits(),
                     capacity: Int = 256, maxSplits: Int = 2048,
                     file: StaticString = #filePath, line: UInt = #line) {
  let o = assertHead(input, limits: limits, capacity: capacity, maxSplits: maxSplits, file: file, line: line)
  XCTAssertEqual(resultName(Int(o.result)), resultName(Int(code(error))), file: file, line: line)
}

func assertHeadError(_ text: String, _ error: pk_error, limits: pk_parse_limits = defaultLimits(),
                     capacity: Int = 256, file: StaticString = #filePath, line: UInt = #line) {
  assertHeadError(bytes(text), error, limits: limits, capacity: capacity, file: file, line: line)
}

// MARK: - chunked

struct ChunkOutcome: Equatable, CustomStringConvertible {
  var result: Int       // total raw bytes consumed, or -PK_E_xxx
  var done = false
  var decoded: [UInt8] = []  // empty on error (how much came before depends on the split)
  var leftoverIntact = true  // bytes after the body were left at their offset
  var consumedEveryPiece = true  // each call before the end consumed its whole piece

  var description: String {
    "ChunkOutcome(\(resultName(result)), done \(done), "
      + "\(String(decoding: decoded, as: UTF8.self).debugDescription), leftover intact \(leftoverIntact), "
      + "consumed every piece \(consumedEveryPiece))"
  }
}

/// Feeds `input` to one pk_chunked decoder following `plan`, each piece in
/// its own buffer (the decoder compacts data to the start of each).
func decodeChunked(_ input: [UInt8], plan: [Int], limits: pk_parse_limits = defaultLimits()) -> ChunkOutcome {
  var dec = pk_chunked()
  pk_chunked_init(&dec)
  var lim = limits
  var o = ChunkOutcome(result: 0)
  var offset = 0
  let buf = UnsafeMutablePointer<CChar>.allocate(capacity: max(input.count, 1))
  defer { buf.deallocate() }
  for piece in plan {
    for i in 0..<piece { buf[i] = CChar(bitPattern: input[offset + i]) }
    var len = piece
    let used = pk_chunked_decode(&dec, buf, &len, &lim)
    if used < 0 { return ChunkOutcome(result: used) }
    o.decoded += UnsafeRawBufferPointer(start: buf, count: len).bindMemory(to: UInt8.self)
    if dec.done != 0 {
      o.done = true
      for i in used..<piece where buf[i] != CChar(bitPattern: input[offset + i]) { o.leftoverIntact = false }
      o.result = offset + used
      return o
    }
    if used != piece { o.consumedEveryPiece = false }
    offset += piece
  }
  o.result = offset
  return o
}

@discardableResult
func assertChunked(_ input: [UInt8], limits: pk_parse_limits = defaultLimits(), maxSplits: Int = 2048,
                   file: StaticString = #filePath, line: UInt = #line) -> ChunkOutcome {
  let plans = FeedPlan.all(count: input.count, maxSplits: maxSplits)
  let whole = decodeChunked(input, plan: plans[0], limits: limits)
  XCTAssertTrue(whole.leftoverIntact && whole.consumedEveryPiece, "\(whole)", file: file, line: line)
  for plan in plans.dropFirst() {
    let o = decodeChunked(input, plan: plan, limits: limits)
    if o != whole {
      XCTFail("plan \(plan.count == input.count ? "byte by byte" : "\(plan)") gave \(o), whole gave \(whole)",
              file: file, line: line)
      break
    }
  }
  return whole
}

@discardableResult
func assertChunked(_ text: String, limits: pk_parse_limits = defaultLimits(),
                   file: StaticString = #filePath, line: UInt = #line) -> ChunkOutcome {
  assertChunked(bytes(text), limits: limits, file: file, line: line)
}

func assertChunkedError(_ input: [UInt8], _ error: pk_error, limits: pk_parse_limits = defaultLimits(),
                        maxSplits: Int = 2048, file: StaticString = #filePath, line: UInt = #line) {
  let o = assertChunked(input, limits: limits, maxSplits: maxSplits, file: file, line: line)
  XCTAssertEqual(resultName(o.result), resultName(Int(code(error))), file: file, line: line)
}

func assertChunkedError(_ text: String, _ error: pk_error, limits: pk_parse_limits = defaultLimits(),
                        file: StaticString = #filePath, line: UInt = #line) {
  assertChunkedError(bytes(text), error, limits: limits, file: file, line: line)
}

// MARK: - body info

/// Parses `head` (whole) and applies pk_response_body_info to it.
func bodyInfo(_ head: String, headRequest: Bool = false,
              file: StaticString = #filePath, line: UInt = #line) -> (Int32, pk_body_info) {
  var input = bytes(head)
  var lim = defaultLimits()
  var hdrs = [pk_header](repeating: pk_header(), count: 64)
  var info = pk_body_info()
  let r: Int32 = input.withUnsafeMutableBufferPointer { raw in
    raw.withMemoryRebound(to: CChar.self) { buf in
      hdrs.withUnsafeMutableBufferPointer { hp in
        var h = pk_response_head()
        h.headers = hp.baseAddress
        h.num_headers = hp.count
        let n = pk_parse_response_head(buf.baseAddress, buf.count, 0, &h, &lim)
        guard n > 0 else {
          XCTFail("head did not parse: \(resultName(Int(n)))", file: file, line: line)
          return n
        }
        return pk_response_body_info(&h, headRequest ? 1 : 0, &info)
      }
    }
  }
  return (r, info)
}
