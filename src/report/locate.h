// Finding the project's own files (scripts/, bench/, build/) from wherever kiln runs.
#pragma once
#include <filesystem>
#include <optional>
#include <vector>

namespace kiln::report {

// The folder that holds the running kiln binary (from /proc/self/exe; empty if unknown).
std::filesystem::path executable_dir();

// Folders where the project's files may be: the current folder, then the executable's folder and its
// parents up to three levels (build/kiln -> the source tree).
std::vector<std::filesystem::path> project_roots();

// The first existing `relative` under project_roots().
std::optional<std::filesystem::path> find_project_file(const std::filesystem::path& relative);

// An executable named `name` on $PATH, or nullopt.
std::optional<std::filesystem::path> find_on_path(const std::string& name);

}  // namespace kiln::report
