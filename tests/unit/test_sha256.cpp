// SHA-256 against the FIPS 180-2 / NIST example vectors.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "jit/sha256.h"
#include "support/diagnostics.h"

namespace plait::jit {
namespace {

TEST(Sha256, Abc) {
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256, Empty) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(Sha256, TwoBlockMessage448Bits) {
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256, MillionAs) {
  Sha256 hasher;
  std::string chunk(1000, 'a');
  for (int i = 0; i < 1000; ++i) hasher.update(chunk);
  EXPECT_EQ(hasher.hex_digest(), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, IncrementalUpdatesMatchOneShot) {
  std::string text;
  for (int i = 0; i < 300; ++i) text += static_cast<char>('a' + i % 26);
  // Split points around the 55/56/64-byte padding boundaries.
  for (size_t split : {0u, 1u, 55u, 56u, 63u, 64u, 65u, 119u, 120u, 299u}) {
    Sha256 hasher;
    hasher.update(std::string_view(text).substr(0, split));
    hasher.update(std::string_view(text).substr(split));
    EXPECT_EQ(hasher.hex_digest(), sha256_hex(text)) << "split at " << split;
  }
  EXPECT_NE(sha256_hex(text.substr(0, 55)), sha256_hex(text.substr(0, 56)));
}

TEST(Sha256, FileDigestMatchesTextDigest) {
  std::string path = (std::filesystem::temp_directory_path() / "plait-sha256-test.bin").string();
  std::string contents(70000, 'x');
  contents[12345] = '\0';
  {
    std::ofstream out(path, std::ios::binary);
    out << contents;
  }
  EXPECT_EQ(sha256_file_hex(path), sha256_hex(contents));
  std::remove(path.c_str());
  EXPECT_THROW(sha256_file_hex(path), InternalError);
}

}  // namespace
}  // namespace plait::jit
