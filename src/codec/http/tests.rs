use super::*;

/// Two requests in one buffer, the second chunked: each head and body in turn, the chunked
/// body joined at the start of its bytes.
#[test]
fn pipelined_requests_come_out_one_after_another() {
    let mut wire = b"POST / HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}\
        POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n[1,\r\n2\r\n2]\r\n0\r\n\r\n"
        .to_vec();
    let mut decoder = RequestDecoder::new(100);
    let mut at = 0;
    let mut bodies = Vec::new();
    while at < wire.len() {
        match decoder.decode(&mut wire[at..]).unwrap() {
            HttpStep::Head(used, _) => at += used,
            HttpStep::Body(used, body) => {
                bodies.push(body.to_vec());
                at += used;
            }
            HttpStep::Incomplete(_) => panic!("all of it is there"),
        }
    }
    assert_eq!(bodies, [b"{}".to_vec(), b"[1,2]".to_vec()]);
}
