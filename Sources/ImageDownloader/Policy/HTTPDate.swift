import Foundation

/// HTTP dates (RFC 9110: IMF-fixdate, and the obsolete RFC 850 and asctime-like forms cookies
/// still use), as in `Retry-After`, `Expires`, `Date` and `Last-Modified`.
enum HTTPDate {
    static func parse(_ text: String) -> Date? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        // The cache reads several per response: IMF-fixdate, nearly every server's form, without
        // a DateFormatter (ICU's parsing is slow).
        if let fast = imfFixdate(trimmed) { return fast }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        for format in ["EEE, dd MMM yyyy HH:mm:ss zzz", "EEEE, dd-MMM-yy HH:mm:ss zzz", "EEE, dd-MMM-yyyy HH:mm:ss zzz"] {
            formatter.dateFormat = format
            if let date = formatter.date(from: trimmed) { return date }
        }
        return nil
    }

    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"].map { Array($0.utf8) }
    private static let days = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"].map { Array($0.utf8) }

    /// `Sun, 06 Nov 1994 08:49:37 GMT`, exactly; nil for anything else.
    static func imfFixdate(_ text: String) -> Date? {
        let b = Array(text.utf8)
        guard b.count == 29, b[3] == UInt8(ascii: ","), b[4] == 0x20, b[7] == 0x20, b[11] == 0x20, b[16] == 0x20,
            b[19] == UInt8(ascii: ":"), b[22] == UInt8(ascii: ":"), b[25] == 0x20, Array(b[26...]) == Array("GMT".utf8),
            days.contains(Array(b[0..<3])), let monthIndex = months.firstIndex(of: Array(b[8..<11]))
        else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            var value = 0
            for i in range {
                guard (0x30...0x39).contains(b[i]) else { return nil }
                value = value * 10 + Int(b[i] - 0x30)
            }
            return value
        }
        guard let day = number(5..<7), let year = number(12..<16), let hour = number(17..<19), let minute = number(20..<22),
            let second = number(23..<25), (1...31).contains(day), hour < 24, minute < 60, second <= 60
        else { return nil }
        // Days from 1970-01-01 to the civil date (Howard Hinnant's algorithm).
        let m = monthIndex + 1
        let y = m <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let daysSinceEpoch = era * 146_097 + dayOfEra - 719_468
        return Date(timeIntervalSince1970: Double(daysSinceEpoch * 86_400 + hour * 3600 + minute * 60 + second))
    }
}
