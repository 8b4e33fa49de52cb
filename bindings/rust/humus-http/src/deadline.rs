//! Deadline propagation (docs/timeouts.md §8.4): the calling service's client sends each attempt's time left in a
//! header (the setting `deadline_header`); the called service reads it back and bounds the calls it makes in
//! turn with it ([`Request::deadline`](crate::Request::deadline)), so a chain of services shares one budget.

use std::time::Duration;

/// Reads a deadline header's value: whole milliseconds (`"1500"`, the setting's `"ms"` format) or gRPC's
/// `grpc-timeout` form, at most 8 digits and a unit `H`, `M`, `S`, `m`, `u` or `n` (`"1500m"`, `"2S"`). `None`
/// for anything else: the value comes from the network, and a malformed one is ignored rather than an error.
pub fn parse_deadline(value: &str) -> Option<Duration> {
    let value = value.trim();
    let (digits, unit) = match value.as_bytes().last()? {
        b'0'..=b'9' => (value, Duration::from_millis(1)),
        b'H' => (&value[..value.len() - 1], Duration::from_secs(3600)),
        b'M' => (&value[..value.len() - 1], Duration::from_secs(60)),
        b'S' => (&value[..value.len() - 1], Duration::from_secs(1)),
        b'm' => (&value[..value.len() - 1], Duration::from_millis(1)),
        b'u' => (&value[..value.len() - 1], Duration::from_micros(1)),
        b'n' => (&value[..value.len() - 1], Duration::from_nanos(1)),
        _ => return None,
    };
    if digits.is_empty() || digits.len() > 8 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u32 = digits.parse().ok()?; // 8 digits fit
    Some(unit * n)
}

/// The deadline an incoming request's header `name` carries, counted from now, or `None` when the header is
/// absent or malformed. Pass it to [`Request::deadline`](crate::Request::deadline) of the calls the request makes.
/// Any thread.
#[cfg(feature = "http")]
pub fn deadline_from_headers(headers: &http::HeaderMap, name: &str) -> Option<std::time::Instant> {
    let value = headers.get(name)?.to_str().ok()?;
    parse_deadline(value).map(|left| std::time::Instant::now() + left)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_formats_parse() {
        for (value, want) in [
            ("1500", Duration::from_millis(1500)),
            ("1500m", Duration::from_millis(1500)),
            ("2S", Duration::from_secs(2)),
            ("1M", Duration::from_secs(60)),
            ("1H", Duration::from_secs(3600)),
            ("250000u", Duration::from_millis(250)),
            ("7n", Duration::from_nanos(7)),
            (" 40 ", Duration::from_millis(40)),
        ] {
            assert_eq!(parse_deadline(value), Some(want), "{value:?}");
        }
    }

    #[test]
    fn malformed_values_are_ignored() {
        for value in ["", "-5", "1.5", "12x", "123456789", "m", "+5"] {
            assert_eq!(parse_deadline(value), None, "{value:?}");
        }
    }

    #[cfg(feature = "http")]
    #[test]
    fn a_header_map_gives_a_deadline_from_now() {
        use std::time::Instant;
        let mut headers = http::HeaderMap::new();
        headers.insert("x-request-timeout", http::HeaderValue::from_static("800"));
        let before = Instant::now();
        let deadline = deadline_from_headers(&headers, "X-Request-Timeout").unwrap();
        assert!(deadline >= before + Duration::from_millis(800));
        assert!(deadline <= Instant::now() + Duration::from_millis(800));
        headers.insert("x-request-timeout", http::HeaderValue::from_static("soon"));
        assert_eq!(deadline_from_headers(&headers, "X-Request-Timeout"), None);
        assert_eq!(deadline_from_headers(&http::HeaderMap::new(), "X-Request-Timeout"), None);
    }
}
