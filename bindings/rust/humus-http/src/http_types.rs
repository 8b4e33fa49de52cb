//! The `http` crate's types (cargo feature `http`), as hyper, axum, tower and reqwest share them:
//! `TryFrom<http::Request<B>>` for [`Request`], and [`Response::into_http`] /
//! `TryFrom<Response>` for `http::Response<Vec<u8>>`. Both ways copy: the bodies are bytes on both sides.
use crate::error::{Error, ErrorKind};
use crate::request::{CallContext, Request, RetryMode};
use crate::response::Response;

/// An `http::Request` extension that sets [`Request::follow_redirects`] when the request converts (cargo
/// feature `http`): `FollowRedirects(false)` gets the first 3xx back, as the `tower` service's callers need.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FollowRedirects(pub bool);

/// The reason phrase of an `http::Response` made by [`Response::into_http`] (cargo feature `http`), in its
/// extensions: the `http` crate's response has no place for the phrase the server sent (its
/// `StatusCode::canonical_reason` is the standard one of the status), so it is kept here, as hyper keeps it
/// in its own `ReasonPhrase` extension. Absent when the response had none ([`Response::reason`] is `""`: over
/// HTTP/2, or a status line without a phrase).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ReasonPhrase(pub String);

/// An `http::Request` as this crate's [`Request`]: its method, its URI, every header in order (repeated
/// names included) and its body (set when not empty; its bytes are copied, so every attempt can replay
/// them). A [`CallContext`], a [`RetryMode`] or a [`FollowRedirects`] in its extensions is applied as
/// [`Request::context`] / [`Request::retry`] / [`Request::follow_redirects`].
///
/// The URI is absolute (`https://payments:8443/v1/x`: sent to that URL, so to the client's origin or
/// refused with [`ErrorKind::CrossOrigin`] when sent, as any request) or origin-form (`/v1/x?a=1`, the
/// default `/` included: joined onto the base_url of the client that sends it, see [`Request`]). The
/// request's `version` is not used: the client's settings choose the protocol (`http_version`).
///
/// Everything is checked here rather than when sent: the error is what [`Request::error`] would hold —
/// [`ErrorKind::InvalidArgument`] naming `url` for an authority-form (`CONNECT`'s `host:port`) or
/// asterisk-form (`*`) URI or a scheme other than http and https, naming the header for a value that is
/// not UTF-8 or a header the client owns (`Host`, docs/transport.md §10.5), naming the context's part for one with CR
/// or LF.
impl<B: AsRef<[u8]>> TryFrom<http::Request<B>> for Request {
    type Error = Error;

    fn try_from(request: http::Request<B>) -> Result<Request, Error> {
        let (parts, body) = request.into_parts();
        let mut out = Request::new(parts.method.as_str(), &url_of(&parts.uri)?);
        for (name, value) in &parts.headers {
            let value = std::str::from_utf8(value.as_bytes()).map_err(|_| {
                Error::new(
                    ErrorKind::InvalidArgument,
                    format!("header {name}: the value is not UTF-8"),
                    vec![name.as_str().to_string()],
                )
            })?;
            out = out.header(name.as_str(), value);
        }
        if let Some(context) = parts.extensions.get::<CallContext>() {
            out = out.context(context);
        }
        if let Some(mode) = parts.extensions.get::<RetryMode>() {
            out = out.retry(*mode);
        }
        if let Some(FollowRedirects(follow)) = parts.extensions.get::<FollowRedirects>() {
            out = out.follow_redirects(*follow);
        }
        let body = body.as_ref();
        if !body.is_empty() {
            out = out.body(body);
        }
        match out.error() {
            Some(e) => Err(e.clone()),
            None => Ok(out),
        }
    }
}

/// The URL a [`Request`] takes for `uri`: absolute as written, or its path and query (relative).
fn url_of(uri: &http::Uri) -> Result<String, Error> {
    if uri.scheme().is_some() {
        return Ok(uri.to_string());
    }
    let refuse = |form: &str| {
        Err(Error::new(
            ErrorKind::InvalidArgument,
            format!("url: \"{uri}\" is an {form} URI; a request takes an absolute URL or a path"),
            vec!["url".to_string()],
        ))
    };
    if uri.authority().is_some() {
        return refuse("authority-form");
    }
    match uri.path_and_query() {
        Some(pq) if pq.as_str() == "*" => refuse("asterisk-form"),
        Some(pq) => Ok(pq.as_str().to_string()),
        None => Ok("/".to_string()),
    }
}

impl Response {
    /// This response as an `http::Response<Vec<u8>>` (cargo feature `http`): its status, every header in
    /// the order received (repeated names included), its body moved, and its version (`1.0`, `1.1`, `2`,
    /// `3`; another reads as HTTP/1.1). What `http::Response` has no field for goes into its extensions: the
    /// [`redirects`](Response::redirects) followed, each with its head, as a `Vec<Redirect>`
    /// (`response.extensions().get::<Vec<humus_http::Redirect>>()`), and the [`reason`](Response::reason)
    /// phrase, when there is one, as a [`ReasonPhrase`]; [`attempts`](Response::attempts) and
    /// [`url`](Response::url) are dropped: read them first.
    ///
    /// A status or a header the `http` crate cannot hold (a status outside 100–999, a name with a space, a
    /// value with a control character) is [`ErrorKind::Protocol`] naming `status` or the header: the peer
    /// sent what HTTP does not allow.
    pub fn into_http(self) -> Result<http::Response<Vec<u8>>, Error> {
        let status = http::StatusCode::from_u16(self.status()).map_err(|_| {
            Error::new(
                ErrorKind::Protocol,
                format!("status {} is not an HTTP status code", self.status()),
                vec!["status".to_string()],
            )
        })?;
        let mut headers = http::HeaderMap::with_capacity(self.headers().len());
        for (name, value) in self.headers() {
            let bad = || {
                Error::new(
                    ErrorKind::Protocol,
                    format!("header {name:?}: not a valid HTTP header for the http crate"),
                    vec![name.clone()],
                )
            };
            let name = http::HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad())?;
            let value = http::HeaderValue::from_bytes(value.as_bytes()).map_err(|_| bad())?;
            headers.append(name, value);
        }
        let version = match self.http_version() {
            "1.0" => http::Version::HTTP_10,
            "2" => http::Version::HTTP_2,
            "3" => http::Version::HTTP_3,
            _ => http::Version::HTTP_11,
        };
        let redirects = self.redirects().to_vec();
        let reason = (!self.reason().is_empty()).then(|| ReasonPhrase(self.reason().to_string()));
        let mut out = http::Response::new(self.into_body());
        out.extensions_mut().insert(redirects);
        if let Some(reason) = reason {
            out.extensions_mut().insert(reason);
        }
        *out.status_mut() = status;
        *out.headers_mut() = headers;
        *out.version_mut() = version;
        Ok(out)
    }
}

/// [`Response::into_http`].
impl TryFrom<Response> for http::Response<Vec<u8>> {
    type Error = Error;

    fn try_from(response: Response) -> Result<http::Response<Vec<u8>>, Error> {
        response.into_http()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::response::Head;

    fn response(status: u16, headers: &[(&str, &str)], version: &str) -> Response {
        Response::from_parts(
            Head {
                status,
                attempts: 2,
                headers: headers.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect(),
                http_version: version.to_string(),
                reason: if version == "2" { String::new() } else { "Fine, Thanks".to_string() },
                url: "https://payments:8443/v1/x".to_string(),
                redirects: Vec::new(),
            },
            b"body".to_vec(),
        )
    }

    fn refusal<B: AsRef<[u8]>>(request: http::Request<B>) -> Error {
        Request::try_from(request).expect_err("the conversion should fail")
    }

    #[test]
    fn a_request_keeps_method_url_and_headers() {
        let request = http::Request::builder()
            .method("PATCH")
            .uri("https://payments:8443/v1/x?a=1")
            .header("X-Tag", "one")
            .header("X-Tag", "two")
            .header("X-Name", "Zoë")
            .body(b"{}".to_vec())
            .unwrap();
        let converted = Request::try_from(request).unwrap();
        assert_eq!((converted.method(), converted.url()), ("PATCH", "https://payments:8443/v1/x?a=1"));
        assert!(converted.error().is_none());
    }

    #[test]
    fn an_origin_form_uri_is_a_relative_url() {
        let request = http::Request::builder().uri("/v1/x?q=2").body(Vec::new()).unwrap();
        let converted = Request::try_from(request).unwrap();
        assert_eq!((converted.method(), converted.url()), ("GET", "/v1/x?q=2"));
        let default = Request::try_from(http::Request::new("")).unwrap();
        assert_eq!(default.url(), "/");
    }

    #[test]
    fn what_cannot_convert_is_refused_naming_it() {
        let connect = http::Request::builder().method("CONNECT").uri("payments:443").body("").unwrap();
        let e = refusal(connect);
        assert_eq!((e.kind(), e.fields()), (ErrorKind::InvalidArgument, &["url".to_string()][..]));
        let options = http::Request::builder().method("OPTIONS").uri("*").body("").unwrap();
        assert_eq!(refusal(options).fields(), ["url"]);
        let ftp = http::Request::builder().uri("ftp://payments/x").body("").unwrap();
        assert_eq!(refusal(ftp).kind(), ErrorKind::InvalidArgument);

        let latin1 = http::HeaderValue::from_bytes(b"caf\xe9").unwrap();
        let e = refusal(http::Request::builder().uri("/x").header("x-name", latin1).body("").unwrap());
        assert_eq!((e.kind(), e.fields()), (ErrorKind::InvalidArgument, &["x-name".to_string()][..]));

        let host = http::Request::builder().uri("/x").header("host", "elsewhere").body("").unwrap();
        assert_eq!(refusal(host).kind(), ErrorKind::InvalidArgument);

        let mut bad_context = http::Request::new("");
        bad_context.extensions_mut().insert(CallContext { baggage: Some("a=1\r\nx: y".into()), ..Default::default() });
        assert_eq!(refusal(bad_context).kind(), ErrorKind::InvalidArgument);
    }

    #[test]
    fn a_response_converts_with_its_repeated_headers() {
        let converted: http::Response<Vec<u8>> =
            response(503, &[("Retry-After", "1"), ("x-multi", "a"), ("X-Multi", "b")], "2").try_into().unwrap();
        assert_eq!(converted.status(), http::StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(converted.version(), http::Version::HTTP_2);
        assert_eq!(converted.headers()["retry-after"], "1");
        let multi: Vec<_> = converted.headers().get_all("x-multi").iter().collect();
        assert_eq!(multi, ["a", "b"]);
        assert_eq!(converted.body(), b"body");
        assert_eq!(converted.extensions().get::<ReasonPhrase>(), None, "HTTP/2 has no phrase");
        let http1 = response(299, &[], "1.1").into_http().unwrap();
        assert_eq!(http1.extensions().get::<ReasonPhrase>(), Some(&ReasonPhrase("Fine, Thanks".to_string())));
        assert_eq!(response(200, &[], "1.1").into_http().unwrap().version(), http::Version::HTTP_11);
        assert_eq!(response(200, &[], "1.0").into_http().unwrap().version(), http::Version::HTTP_10);
    }

    #[test]
    fn a_response_http_cannot_hold_is_a_protocol_error() {
        let e = response(0, &[], "1.1").into_http().unwrap_err();
        assert_eq!((e.kind(), e.fields()), (ErrorKind::Protocol, &["status".to_string()][..]));
        let e = response(200, &[("bad name", "v")], "1.1").into_http().unwrap_err();
        assert_eq!((e.kind(), e.fields()), (ErrorKind::Protocol, &["bad name".to_string()][..]));
        let e = response(200, &[("x-ok", "a\u{7f}b")], "1.1").into_http().unwrap_err();
        assert_eq!(e.fields(), ["x-ok"]);
    }
}
