// The factory over the mapping schemes: MappingNames and MakeMapping
// (declared in roundtable/mapping.h), above every scheme.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "roundtable/mapping.h"
#include "engine/mapping/jump_hash.h"
#include "engine/mapping/linear_hashing.h"
#include "engine/mapping/round_mapping.h"

namespace roundtable::mapping {
namespace {

template <typename T>
absl::StatusOr<std::unique_ptr<BucketMapping>> Boxed(absl::StatusOr<T> made) {
  if (!made.ok()) return made.status();
  return std::make_unique<T>(*std::move(made));
}

}  // namespace

std::vector<std::string> MappingNames() {
  return {"round", "jump", "linear-slack", "linear-litwin", "modulo"};
}

absl::StatusOr<std::unique_ptr<BucketMapping>> MakeMapping(
    std::string_view name, uint64_t s0, uint64_t num_buckets) {
  if (name == "round") return Boxed(RoundMapping::Create(s0, num_buckets));
  if (name == "jump") return Boxed(JumpMapping::Create(num_buckets));
  if (name == "linear-slack") {
    return Boxed(SlackLinearHashing::Create(s0, num_buckets));
  }
  if (name == "linear-litwin") {
    return Boxed(LitwinLinearHashing::Create(num_buckets));
  }
  if (name == "modulo") return Boxed(ModuloMapping::Create(num_buckets));
  return absl::InvalidArgumentError(
      absl::StrCat("unknown mapping '", std::string(name),
                   "'; expected one of ", absl::StrJoin(MappingNames(), ", ")));
}

}  // namespace roundtable::mapping
