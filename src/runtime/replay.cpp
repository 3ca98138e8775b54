// The retired recordings of REPLAY_REUSABLE plans (interface/backend-impl.h).
#include <algorithm>
#include <utility>

#include "interface/backend-impl.h"

namespace ggx {

size_t RetiredRecordings::bytes_of(const Entry & entry) {
    return entry.workspace ? entry.workspace->size : 0;
}

void RetiredRecordings::retire(Entry entry) {
    if (!entry.recording || bytes_of(entry) > kMaxWorkspaceBytes) return;
    take(entry.key);
    workspace_bytes_ += bytes_of(entry);
    entries_.push_back(std::move(entry));
    while (entries_.size() > kMaxEntries || workspace_bytes_ > kMaxWorkspaceBytes) {
        workspace_bytes_ -= bytes_of(entries_.front());
        entries_.erase(entries_.begin());
    }
}

RetiredRecordings::Entry RetiredRecordings::take(const std::string & key) {
    const auto it = std::find_if(entries_.begin(), entries_.end(), [&](const Entry & e) { return e.key == key; });
    if (it == entries_.end()) return {};
    Entry entry = std::move(*it);
    entries_.erase(it);
    workspace_bytes_ -= bytes_of(entry);
    return entry;
}

}  // namespace ggx
