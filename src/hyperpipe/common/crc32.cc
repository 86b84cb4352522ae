#include "hyperpipe/common/crc32.h"

#include <array>
#include <fstream>

#include "hyperpipe/common/error.h"

namespace hyperpipe {
namespace {

// The reversed CRC-32 polynomial of IEEE 802.3 (x³² + x²⁶ + … + 1).
constexpr uint32_t kPolynomial = 0xEDB88320u;
// The reversed Castagnoli polynomial (RFC 3720, section B.4).
constexpr uint32_t kCastagnoli = 0x82F63B78u;

constexpr std::array<uint32_t, 256> make_table(uint32_t polynomial) {
  std::array<uint32_t, 256> table{};
  for (uint32_t n = 0; n < 256; ++n) {
    uint32_t c = n;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? polynomial ^ (c >> 1) : c >> 1;
    table[n] = c;
  }
  return table;
}

constexpr auto kTable = make_table(kPolynomial);
constexpr auto kCastagnoliTable = make_table(kCastagnoli);

uint32_t reflected_crc(const std::array<uint32_t, 256>& table, const void* data, size_t size,
                       uint32_t crc) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  crc = ~crc;
  for (size_t i = 0; i < size; ++i) crc = table[(crc ^ bytes[i]) & 0xFFu] ^ (crc >> 8);
  return ~crc;
}

}  // namespace

uint32_t crc32(const void* data, size_t size, uint32_t crc) {
  return reflected_crc(kTable, data, size, crc);
}

uint32_t crc32c(const void* data, size_t size, uint32_t crc) {
  return reflected_crc(kCastagnoliTable, data, size, crc);
}

uint32_t file_crc32(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", "a readable file");
  char buffer[1 << 16];
  uint32_t crc = 0;
  while (in) {
    in.read(buffer, sizeof buffer);
    crc = crc32(buffer, static_cast<size_t>(in.gcount()), crc);
  }
  return crc;
}

}  // namespace hyperpipe
