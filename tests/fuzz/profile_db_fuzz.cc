// Fuzzes the profile database reader and its look-ups.
#include "fuzz_input.h"
#include "hyperpipe/cost/profile_db.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return hyperpipe::fuzz::run_on_text(data, size, [](const std::string& text) {
    const auto db =
        hyperpipe::cost::ProfileDb::read(hyperpipe::YamlField::load_string(text, "profiles.json"));
    for (const auto& entry : db.entries()) {
      for (int64_t micro_batch : {int64_t{1}, entry.micro_batch, entry.micro_batch + 3}) {
        (void)db.find(entry.key, micro_batch);
      }
      (void)db.optimizer(entry.key);
    }
    (void)nlohmann::json(hyperpipe::cost::to_json(db)).dump();
  });
}
