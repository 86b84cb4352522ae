// CRC-32 as zlib, gzip and PNG compute it (reflected polynomial 0xEDB88320, initial and
// final XOR 0xFFFFFFFF): the checksum of checkpoint files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace hyperpipe {

uint32_t crc32(const void* data, size_t size, uint32_t crc = 0);

// CRC-32C (Castagnoli: reflected polynomial 0x82F63B78, the same initial and final XOR), as
// iSCSI, ext4 and TensorFlow's record files (TensorBoard's event files) compute it.
uint32_t crc32c(const void* data, size_t size, uint32_t crc = 0);
// Of a whole file; throws InputError naming it when it cannot be read.
uint32_t file_crc32(const std::string& path);

}  // namespace hyperpipe
