// The byte formats under the TensorBoard and W&B loggers, against published check values and
// the independent readers in wire_decoder.h.
#include "append_only_file.h"
#include "buffered_append_file.h"
#include "crc32c.h"
#include "logger_test_support.h"
#include "protobuf_writer.h"
#include "python_str.h"
#include "tfrecord_writer.h"
#include "wandb_records.h"
#include "wandb_transaction_log.h"
#include "wire_decoder.h"

#include <ft/errors.h>

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>

namespace {

using fttest::DecodeError;
using fttest::Message;

std::string random_bytes(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng() & 0xFF);
  return s;
}

// Expected texts are Python 3.11's repr() of the same values (what MLflow's file store writes for a
// metric and torchtune's loggers send for a config value).
TEST(PythonStr, FloatsAsPythonsReprSpellsThem) {
  const std::vector<std::pair<double, std::string>> cases = {{3.0, "3.0"},
                                                             {1e-05, "1e-05"},
                                                             {2e-05, "2e-05"},
                                                             {0.1, "0.1"},
                                                             {1e+16, "1e+16"},
                                                             {1000000000000000.0, "1000000000000000.0"},
                                                             {123456789.0, "123456789.0"},
                                                             {0.00015, "0.00015"},
                                                             {0.0001, "0.0001"},
                                                             {-0.0, "-0.0"},
                                                             {1.5, "1.5"},
                                                             {0.003, "0.003"},
                                                             {2.5e-05, "2.5e-05"},
                                                             {1.0 / 3.0, "0.3333333333333333"},
                                                             {5e-324, "5e-324"},
                                                             {1.7976931348623157e+308, "1.7976931348623157e+308"},
                                                             {12345678901234567.0, "1.2345678901234568e+16"},
                                                             {HUGE_VAL, "inf"},
                                                             {-HUGE_VAL, "-inf"},
                                                             {std::nan(""), "nan"}};
  for (const auto& [value, text] : cases) EXPECT_EQ(ft_loggers::python_float_str(value), text) << text;
}

TEST(PythonStr, StringsAsPythonsReprQuotesThem) {
  EXPECT_EQ(ft_loggers::python_string_repr("a'b"), "\"a'b\"");
  EXPECT_EQ(ft_loggers::python_string_repr("a\"b"), "'a\"b'");
  EXPECT_EQ(ft_loggers::python_string_repr("a'b\"c"), "'a\\'b\"c'");
  EXPECT_EQ(ft_loggers::python_string_repr("x\ny"), "'x\\ny'");
  EXPECT_EQ(ft_loggers::python_string_repr("tab\t"), "'tab\\t'");
  EXPECT_EQ(ft_loggers::python_string_repr("back\\slash"), "'back\\\\slash'");
  EXPECT_EQ(ft_loggers::python_string_repr("\xc3\xbcn\xc3\xaf"), "'\xc3\xbcn\xc3\xaf'");
  EXPECT_EQ(ft_loggers::python_list_repr({"1", "'a'"}), "[1, 'a']");
}

TEST(Crc32c, PublishedCheckValues) {
  EXPECT_EQ(ft_loggers::crc32c("123456789"), 0xE3069283u);  // the CRC catalogue's check value
  EXPECT_EQ(ft_loggers::crc32c(""), 0u);
  // RFC 3720 (iSCSI) B.4 test vectors.
  EXPECT_EQ(ft_loggers::crc32c(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(ft_loggers::crc32c(std::string(32, '\xFF')), 0x62A8AB43u);
  std::string ascending, descending;
  for (int i = 0; i < 32; ++i) ascending += static_cast<char>(i), descending += static_cast<char>(31 - i);
  EXPECT_EQ(ft_loggers::crc32c(ascending), 0x46DD794Eu);
  EXPECT_EQ(ft_loggers::crc32c(descending), 0x113FDB5Cu);
}

TEST(Crc32c, MatchesBitwiseReferenceAndContinues) {
  for (std::size_t n : {1u, 7u, 64u, 1000u}) {
    const std::string data = random_bytes(n, static_cast<std::uint32_t>(n));
    EXPECT_EQ(ft_loggers::crc32c(data), fttest::reference_crc32c(data)) << n;
    const std::size_t half = n / 2;
    EXPECT_EQ(ft_loggers::crc32c(data.substr(half), ft_loggers::crc32c(data.substr(0, half))),
              ft_loggers::crc32c(data));
  }
  EXPECT_EQ(fttest::reference_crc32_ieee("123456789"), 0xCBF43926u);  // the reference reader's own check
}

TEST(ProtoWriter, WireFormatDecodesIndependently) {
  ft_loggers::ProtoWriter nested;
  nested.bytes(1, "inner");
  ft_loggers::ProtoWriter m;
  m.varint(1, 300)
      .int64(2, -5)
      .double_value(3, 2.5)
      .float_value(4, 1.25f)
      .packed_float(5, -3.0f)
      .bytes(6, "text")
      .message(7, nested);
  const std::string& bytes = m.data();
  EXPECT_EQ(bytes.substr(0, 3), std::string("\x08\xAC\x02", 3));  // the protobuf guide's 300 example
  const Message d(bytes);
  EXPECT_EQ(d.varint_field(1), 300u);
  EXPECT_EQ(d.int_field(2), -5);
  EXPECT_EQ(d.last(2, 0).number, static_cast<std::uint64_t>(-5));  // ten-byte two's complement
  EXPECT_EQ(d.double_field(3), 2.5);
  EXPECT_EQ(d.floats(4), std::vector<float>{1.25f});
  EXPECT_EQ(d.floats(5), std::vector<float>{-3.0f});
  EXPECT_EQ(d.string_field(6), "text");
  EXPECT_EQ(d.message_field(7).string_field(1), "inner");
}

TEST(TFRecord, RoundTripAndCorruptionIsDetected) {
  const std::string path = fttest::temp_dir() + "/records";
  std::vector<std::string> written = {"", "a", random_bytes(100, 1), random_bytes(70000, 2)};
  {
    ft_loggers::TFRecordWriter writer(path);
    for (const auto& r : written) writer.append(r);
    EXPECT_EQ(fttest::read_file(path), "") << "nothing reaches the file before a flush";
    writer.flush();
    EXPECT_EQ(fttest::read_tfrecords(fttest::read_file(path)), written);
    writer.append("after");
    writer.close();
  }
  written.push_back("after");
  const std::string file = fttest::read_file(path);
  ASSERT_EQ(fttest::read_tfrecords(file), written);
  // Any flipped byte breaks one of the two checksums (or the framing).
  for (std::size_t at : {std::size_t{0}, std::size_t{9}, std::size_t{16 + 12}, file.size() - 1, file.size() / 2}) {
    std::string bad = file;
    bad[at] = static_cast<char>(bad[at] ^ 0x01);
    EXPECT_THROW(fttest::read_tfrecords(bad), DecodeError) << "byte " << at;
  }
}

TEST(TFRecord, RefusesToOverwriteAnExistingFile) {
  const std::string path = fttest::write_temp("events", "x");
  EXPECT_THROW(ft_loggers::TFRecordWriter{path}, std::runtime_error);
  EXPECT_EQ(fttest::read_file(path), "x");
}

TEST(BufferedAppendFile, BytesReachTheFileOnlyOnFlushAndAbandonAddsNothing) {
  const std::string path = fttest::temp_dir() + "/log";
  ft_loggers::BufferedAppendFile file(path);
  file.append("first ");
  file.append("record|");
  EXPECT_EQ(fttest::read_file(path), "");
  EXPECT_EQ(file.buffered_bytes(), 13u);
  file.flush();
  EXPECT_EQ(fttest::read_file(path), "first record|");
  EXPECT_EQ(file.buffered_bytes(), 0u);
  file.append("second record, half");
  file.abandon();
  EXPECT_FALSE(file.is_open());
  EXPECT_EQ(file.buffered_bytes(), 0u);
  EXPECT_EQ(fttest::read_file(path), "first record|");
  const std::string after = fttest::error_of<ft::Error>([&] {
    file.append("x");
    file.flush();
  });
  EXPECT_EQ(after, "cannot write " + path + ": the file is closed");
  EXPECT_EQ(fttest::read_file(path), "first record|");
}

TEST(BufferedAppendFile, DestroyedUnclosedItWritesNothingMoreAndCloseFlushes) {
  const std::string dropped = fttest::temp_dir() + "/dropped";
  {
    ft_loggers::BufferedAppendFile file(dropped);
    file.append("kept");
    file.flush();
    file.append("never flushed");
  }
  EXPECT_EQ(fttest::read_file(dropped), "kept");
  const std::string closed = fttest::temp_dir() + "/closed";
  ft_loggers::BufferedAppendFile file(closed);
  file.append("all of it");
  file.close();
  EXPECT_FALSE(file.is_open());
  EXPECT_EQ(fttest::read_file(closed), "all of it");
  file.close();  // idempotent
}

// /dev/full accepts the open and fails every write with ENOSPC: a real write failure.
TEST(BufferedAppendFile, AFailedFlushIsStickyAndCloseReleasesTheFileWithoutWriting) {
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "needs /dev/full to make a write fail";
  ft_loggers::BufferedAppendFile file("/dev/full", ft_loggers::AppendOnlyFile::IfExists::Append);
  file.append("record");
  const std::string first = fttest::error_of<ft::Error>([&] { file.flush(); });
  EXPECT_EQ(first.rfind("cannot write /dev/full: No space left on device", 0), 0u) << first;
  EXPECT_TRUE(file.failed());
  EXPECT_EQ(file.buffered_bytes(), 6u) << "a failed flush keeps its bytes, never half of them";
  EXPECT_EQ(fttest::error_of<ft::Error>([&] { file.flush(); }), first) << "sticky";
  EXPECT_EQ(fttest::error_of<ft::Error>([&] { file.close(); }), first);
  EXPECT_FALSE(file.is_open());
  EXPECT_EQ(file.buffered_bytes(), 0u);
}

TEST(TFRecord, AbandonLeavesOnlyTheFlushedRecords) {
  const std::string path = fttest::temp_dir() + "/events";
  ft_loggers::TFRecordWriter writer(path);
  writer.append("flushed");
  writer.flush();
  writer.append(random_bytes(5000, 7));
  writer.abandon();
  EXPECT_EQ(fttest::read_tfrecords(fttest::read_file(path)), std::vector<std::string>{"flushed"});
}

TEST(WandbTransactionLog, AbandonLeavesOnlyTheFlushedRecords) {
  const std::string path = fttest::temp_dir() + "/run.wandb";
  ft_loggers::WandbTransactionLog log(path);
  log.append("flushed");
  log.flush();
  log.append(random_bytes(100000, 8));  // would span blocks
  log.abandon();
  EXPECT_EQ(fttest::read_wandb_log(fttest::read_file(path)), std::vector<std::string>{"flushed"});
}

// Records sized so that block tails of every length from 0 to 8 bytes occur, plus records
// spanning several blocks.
TEST(WandbTransactionLog, ChunkingRoundTripsEveryRecord) {
  const std::string path = fttest::temp_dir() + "/run.wandb";
  std::vector<std::string> written;
  {
    ft_loggers::WandbTransactionLog log(path);
    EXPECT_EQ(fttest::read_file(path), std::string(":W&B\xE1\xBE\x00", 7)) << "header written on open";
    std::uint32_t seed = 0;
    auto append = [&](std::string record) {
      written.push_back(std::move(record));
      log.append(written.back());
      log.flush();
      return fttest::read_file(path).size();  // every chunk is on disk: the logical offset
    };
    std::size_t offset = 7;
    for (std::size_t tail = 0; tail <= 8; ++tail) {
      while (32768 - offset % 32768 < 7 + tail) offset = append("f");
      // A FULL record that leaves exactly `tail` bytes in its block, then a record after it.
      offset = append(random_bytes(32768 - offset % 32768 - 7 - tail, ++seed));
      EXPECT_EQ((32768 - offset % 32768) % 32768, tail);
      offset = append(random_bytes(5, ++seed));
    }
    written.push_back(random_bytes(100000, ++seed));  // FIRST, MIDDLE, MIDDLE, LAST
    log.append(written.back());
    written.push_back("");
    log.append("");
    log.close();
  }
  const std::string file = fttest::read_file(path);
  ASSERT_EQ(fttest::read_wandb_log(file), written);

  std::string bad = file;
  bad[7 + 7 + 3] = static_cast<char>(bad[7 + 7 + 3] ^ 0x40);  // inside the first record's data
  EXPECT_THROW(fttest::read_wandb_log(bad), DecodeError);
  bad = file;
  bad[7 + 6] = 9;  // the first chunk's type
  EXPECT_THROW(fttest::read_wandb_log(bad), DecodeError);
}

TEST(WandbRecords, FieldNumbersOfWandbInternalProto) {
  const Message run(ft_loggers::wandb_run_record(1, {"abc12345", "team", "proj", "grp", "name", "host", 1700000000.25},
                                                 {{"lr", "0.001"}}));
  EXPECT_EQ(run.int_field(1), 1);
  const Message r = run.message_field(17);
  EXPECT_EQ(r.string_field(1), "abc12345");
  EXPECT_EQ(r.string_field(2), "team");
  EXPECT_EQ(r.string_field(3), "proj");
  EXPECT_EQ(r.string_field(6), "grp");
  EXPECT_EQ(r.string_field(8), "name");
  EXPECT_EQ(r.string_field(13), "host");
  EXPECT_EQ(r.message_field(17).int_field(1), 1700000000);
  EXPECT_EQ(r.message_field(17).int_field(2), 250000000);
  const auto items = r.message_field(4).messages(1);
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0].string_field(1), "lr");
  EXPECT_EQ(items[0].string_field(16), "0.001");

  const Message exit(ft_loggers::wandb_exit_record(7, 2, 30));
  EXPECT_EQ(exit.message_field(18).int_field(1), 2);
  EXPECT_EQ(exit.message_field(18).int_field(2), 30);
  const Message final_record(ft_loggers::wandb_final_record(8));
  EXPECT_TRUE(final_record.has(20)) << "an empty FinalRecord is still written, so the oneof is set";

  EXPECT_EQ(ft_loggers::json_number(0.5), "0.5");
  EXPECT_EQ(ft_loggers::json_number(3), "3");
  EXPECT_EQ(ft_loggers::json_number(std::nan("")), "NaN");
  EXPECT_EQ(ft_loggers::json_number(-HUGE_VAL), "-Infinity");
}

}  // namespace
