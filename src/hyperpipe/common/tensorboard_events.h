// TensorBoard's event files, written without TensorFlow: a TFRecord stream (each record its
// length, the length's masked CRC-32C, the data, the data's masked CRC-32C) of Event
// protocol buffers: first the file version, then one event per scalar (tag, value, step,
// wall time). What `tensorboard --logdir` and its EventAccumulator read; TensorBoard's own
// reader is the judge in tests/oracles/tensorboard_oracle.py.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>

namespace hyperpipe {

// One run's event file in a log directory. Each scalar is flushed as it comes, so
// TensorBoard shows a run while it trains; a run cut short leaves whole records behind it
// (a reader passes over a last one cut in two).
class TensorBoardWriter {
 public:
  // Creates `dir` if needed and in it events.out.tfevents.SECONDS.HOST.PID.hyperpipe;
  // InputError naming `dir` when it cannot.
  explicit TensorBoardWriter(const std::string& dir);

  // A scalar at `step`, written at `wall_time` (seconds since the Unix epoch).
  void add_scalar(const std::string& tag, double value, int64_t step, double wall_time);

  const std::string& path() const { return path_; }

 private:
  void write_record(const std::string& data);

  std::string path_;
  std::ofstream out_;
};

// The protocol-buffer bytes of an Event holding one scalar (tensorboard's Event: wall_time
// = 1, step = 2, summary = 5; Summary.value = 1; Value.tag = 1, simple_value = 2, a float).
std::string scalar_event(const std::string& tag, double value, int64_t step, double wall_time);

// TFRecord's frame of `data`: what write_record appends.
std::string tf_record(const std::string& data);

}  // namespace hyperpipe
