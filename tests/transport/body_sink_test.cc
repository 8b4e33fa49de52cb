// The write callback's sink (transport/body_sink.h): a buffered body never past its limit, in memory either;
// a streamed one copied into the reader's buffer, keeping at most one write and pausing on the next.
#include "transport/body_sink.h"

#include <curl/curl.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace humus::transport {
namespace {
namespace HUMUS_UNITY_ID {

TEST(BodySinkTest, BufferedBodyStopsAtItsLimitAndItsCapacityStaysWithin) {
  constexpr size_t kLimit = 4 * 1024 * 1024 + 1000;
  std::string body;
  BodySink sink;
  sink.buffer_into(&body, kLimit);
  const std::string piece(16384, 'a');
  size_t taken = 0;
  for (int i = 0; i < 256; ++i) taken += sink.write(piece.data(), piece.size());
  EXPECT_EQ(taken, 256u * 16384);
  EXPECT_FALSE(sink.over_limit());
  EXPECT_LE(body.capacity(), kLimit + 64);  // never doubled past the limit (8 MiB)
  EXPECT_EQ(sink.write(piece.data(), piece.size()), 0u);  // past the limit: aborts
  EXPECT_TRUE(sink.over_limit());
  EXPECT_EQ(body.size(), 256u * 16384);
  EXPECT_EQ(sink.write("x", 1), 0u);  // and stays aborted
}

TEST(BodySinkTest, ASmallLimitBoundsTheCapacityToTwiceIt) {
  std::string body;
  BodySink sink;
  sink.buffer_into(&body, 100000);
  const std::string piece(16384, 'a');
  for (int i = 0; i < 6; ++i) EXPECT_EQ(sink.write(piece.data(), piece.size()), piece.size());
  EXPECT_EQ(sink.write(piece.data(), piece.size()), 0u);  // 7 * 16384 > 100000
  EXPECT_LE(body.capacity(), 2u * 100000);
}

// A limit of a TiB (the setting's maximum) is not an allocation: a 2 MiB body once failed with
// HUMUS_E_NO_MEMORY because the sink reserved the whole limit up front.
TEST(BodySinkTest, AHugeLimitReservesOnlyWhatTheBodyNeeds) {
  std::string body;
  BodySink sink;
  sink.buffer_into(&body, uint64_t{1} << 40);
  const std::string piece(16384, 'a');
  for (int i = 0; i < 128; ++i) ASSERT_EQ(sink.write(piece.data(), piece.size()), piece.size());
  EXPECT_EQ(body.size(), 2u << 20);
  EXPECT_LE(body.capacity(), 8u << 20);
}

TEST(BodySinkTest, AContentLengthIsReservedOnceUpToOneMiB) {
  std::string body;
  BodySink sink;
  sink.buffer_into(&body, 64 << 20);
  sink.expect(65536);
  ASSERT_GE(body.capacity(), 65536u);
  const char* at = body.data();
  const std::string piece(16384, 'a');
  for (int i = 0; i < 4; ++i) ASSERT_EQ(sink.write(piece.data(), piece.size()), piece.size());
  EXPECT_EQ(body.data(), at);  // no growth, no copy

  std::string large;
  sink.buffer_into(&large, 64 << 20);
  sink.expect(40 << 20);  // a hint, not a promise: only the first MiB is reserved
  EXPECT_EQ(large.capacity(), 1u << 20);
  std::string over;
  sink.buffer_into(&over, 1000);
  sink.expect(5000);  // past the limit: the write that passes it aborts; nothing reserved
  EXPECT_LT(over.capacity(), 1000u);
}

TEST(BodySinkTest, ABodyOfExactlyTheLimitFits) {
  std::string body;
  BodySink sink;
  sink.buffer_into(&body, 10);
  EXPECT_EQ(sink.write("0123456789", 10), 10u);
  EXPECT_FALSE(sink.over_limit());
  EXPECT_EQ(body, "0123456789");
}

TEST(BodySinkTest, StreamedWritesFillTheLentBufferKeepWhatFollowsUpToKeepAheadThenPause) {
  BodySink sink;
  sink.stream();
  char buf[8];
  sink.lend(buf, sizeof buf);
  EXPECT_EQ(sink.write("abcde", 5), 5u);
  EXPECT_EQ(sink.write("fghij", 5), 5u);  // 3 fit, 2 are kept
  EXPECT_EQ(sink.taken(), 8u);
  EXPECT_TRUE(sink.has_pending());
  // libcurl reads the socket again within the same read: kept too, up to kKeepAhead in all.
  EXPECT_EQ(sink.write("klm", 3), 3u);
  const std::string big(BodySink::kKeepAhead - 5, 'x');
  EXPECT_EQ(sink.write(big.data(), big.size()), big.size());                 // exactly kKeepAhead kept now
  EXPECT_EQ(sink.write("n", 1), static_cast<size_t>(CURL_WRITEFUNC_PAUSE));  // one more: libcurl keeps it
  EXPECT_TRUE(sink.paused());
  EXPECT_EQ(sink.unlend(), 8u);
  EXPECT_EQ(std::string(buf, 8), "abcdefgh");

  // The kept bytes come back in order, across reads.
  std::string kept(BodySink::kKeepAhead, '\0');
  EXPECT_EQ(sink.drain(kept.data(), 5), 5u);
  EXPECT_EQ(kept.substr(0, 5), "ijklm");
  EXPECT_EQ(sink.drain(kept.data(), kept.size()), big.size());
  EXPECT_EQ(kept.substr(0, big.size()), big);
  EXPECT_FALSE(sink.has_pending());
  sink.resumed();
  char next[8];
  sink.lend(next, sizeof next);
  EXPECT_EQ(sink.write("n", 1), 1u);  // handed over again after the unpause
  EXPECT_EQ(sink.unlend(), 1u);
  EXPECT_EQ(next[0], 'n');
}

TEST(BodySinkTest, KeptBytesPartlyDrainedMakeRoomForMoreDuringTheNextRead) {
  BodySink sink;
  sink.stream();
  char buf[4];
  sink.lend(buf, sizeof buf);
  EXPECT_EQ(sink.write("abcdef", 6), 6u);  // "ef" kept
  EXPECT_EQ(sink.unlend(), 4u);
  char one[1];
  EXPECT_EQ(sink.drain(one, 1), 1u);  // "e" taken, "f" still kept
  sink.lend(buf, sizeof buf);
  EXPECT_EQ(sink.write("gh", 2), 2u);  // appended after "f"
  EXPECT_EQ(sink.unlend(), 0u);
  char rest[8];
  EXPECT_EQ(sink.drain(rest, sizeof rest), 3u);
  EXPECT_EQ(std::string(rest, 3), "fgh");

  sink.lend(buf, sizeof buf);
  EXPECT_EQ(sink.write("ijklmn", 6), 6u);  // "mn" kept
  EXPECT_EQ(sink.unlend(), 4u);
  sink.release_kept();  // the body closed early: its keep goes with it
  EXPECT_FALSE(sink.has_pending());
  EXPECT_EQ(sink.drain(rest, sizeof rest), 0u);
}

// The transfer is paused (from the write callback) once a read has bytes and no room for a whole receive, so
// libcurl's next receive is not made into the keep: a reader's buffer of two receives or more gets every byte
// straight from libcurl, copied once.
TEST(BodySinkTest, AReadWithNoRoomForAnotherReceiveAsksToHoldTheTransfer) {
  BodySink sink;
  sink.stream();
  EXPECT_FALSE(sink.should_hold());  // no read in progress
  std::vector<char> buf(2 * BodySink::kReceiveBuffer);
  sink.lend(buf.data(), buf.size());
  EXPECT_FALSE(sink.should_hold());  // nothing yet: a reader waits for at least one byte
  const std::string receive(BodySink::kReceiveBuffer, 'r');
  EXPECT_EQ(sink.write(receive.data(), receive.size()), receive.size());
  EXPECT_FALSE(sink.should_hold());  // room for exactly one more receive
  EXPECT_EQ(sink.write("x", 1), 1u);
  EXPECT_TRUE(sink.should_hold());  // not any more
  sink.holds();
  EXPECT_TRUE(sink.paused());
  EXPECT_FALSE(sink.should_hold());  // held once
  EXPECT_FALSE(sink.has_pending());  // nothing went into the keep
  EXPECT_EQ(sink.unlend(), receive.size() + 1);
  sink.resumed();

  // A buffer smaller than a receive: held after its first write, what did not fit kept for the next read.
  char small[100];
  sink.lend(small, sizeof small);
  EXPECT_EQ(sink.write(receive.data(), 300), 300u);
  EXPECT_TRUE(sink.should_hold());
  EXPECT_TRUE(sink.has_pending());
  sink.discard_rest();
  EXPECT_FALSE(sink.should_hold());  // a transfer being cut is not held
}

// A reader's buffer that lies just past libcurl's in their pages (16 bytes, mod 4 KiB) is filled in pieces
// (see copy_into_reader): every byte lands, in order, up to the last partial piece.
TEST(BodySinkTest, AWriteIntoABufferOffsetByUnder256BytesModuloAPageArrivesWhole) {
  std::vector<char> arena(128 * 1024);
  char* const src = arena.data();
  char* const dst = arena.data() + 9 * 4096 + 16;
  const size_t n = 32 * 1024 + 5;
  for (size_t i = 0; i < n; ++i) src[i] = static_cast<char>(i * 131 + i / 4096);
  BodySink sink;
  sink.stream();
  sink.lend(dst, n);
  EXPECT_EQ(sink.write(src, n), n);
  EXPECT_EQ(sink.unlend(), n);
  EXPECT_EQ(std::memcmp(dst, src, n), 0);
}

TEST(BodySinkTest, WritesBeforeAnyReadAreKeptUpToOneThenPaused) {
  BodySink sink;
  sink.stream();
  EXPECT_EQ(sink.write("head", 4), 4u);  // no buffer lent yet (the headers just came): kept
  EXPECT_EQ(sink.write("more", 4), static_cast<size_t>(CURL_WRITEFUNC_PAUSE));
  char buf[2];
  EXPECT_EQ(sink.drain(buf, sizeof buf), 2u);
  EXPECT_EQ(sink.drain(buf, sizeof buf), 2u);
  EXPECT_EQ(std::string(buf, 2), "ad");
  EXPECT_FALSE(sink.has_pending());
}

TEST(BodySinkTest, DecodedHeadersGoOnlyWhenAnEncodingWasApplied) {
  Headers h;
  h.add("Content-Encoding", "gzip");
  h.add("Content-Length", "12");
  h.add("Content-Type", "text/plain");
  EXPECT_TRUE(strip_decoded_headers(h));
  EXPECT_FALSE(h.contains("Content-Encoding"));
  EXPECT_FALSE(h.contains("Content-Length"));
  EXPECT_TRUE(h.contains("Content-Type"));

  Headers identity;
  identity.add("Content-Encoding", "identity");
  identity.add("Content-Length", "12");
  EXPECT_FALSE(strip_decoded_headers(identity));
  EXPECT_TRUE(identity.contains("Content-Length"));
}

}  // namespace HUMUS_UNITY_ID
}  // namespace
}  // namespace humus::transport
