// Recording::save / Recording::load: the file I/O around the pure format reader and writer.
#include "common/file_io.h"
#include "common/log.h"
#include "freezeframe/recording.h"
#include "frontend/recording_state.h"
#include "recorder/format_reader.h"
#include "recorder/format_writer.h"

namespace ff {

bool Recording::is_capture() const {
  return state_->data->is_capture;
}

bool Recording::is_optimized() const {
  return !state_->data->passes.empty();
}

void Recording::save(const std::string& path) const {
  std::vector<std::byte> bytes = format::write(*state_->data);
  write_file_atomic(path, bytes, /*durable=*/true);
  logging::format().debug("saved {} ({} bytes) to '{}'", state_->data->summary(), bytes.size(),
                          path);
}

Recording Recording::load(const std::string& path, size_t index) {
  format::ParsedFile file = format::parse_file(path);
  if (index >= file.recordings.size())
    throw Error(path + ": holds " + std::to_string(file.recordings.size()) +
                " recording(s); there is no recording " + std::to_string(index));
  auto state = std::make_shared<detail::RecordingState>(std::move(file.recordings[index]));
  logging::format().debug("loaded {} from '{}'", state->data->summary(), path);
  return Recording(std::move(state));
}

}  // namespace ff
