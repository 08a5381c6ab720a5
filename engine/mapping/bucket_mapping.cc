#include "roundtable/mapping.h"

#include "absl/strings/str_cat.h"

namespace roundtable::mapping {

absl::Status CheckListable(std::string_view scheme, uint64_t sources) {
  if (sources > kMaxListedBuckets) {
    return absl::ResourceExhaustedError(
        absl::StrCat(std::string(scheme), ": this step would list ", sources,
                     " buckets, more than the limit of ", kMaxListedBuckets));
  }
  return absl::OkStatus();
}

}  // namespace roundtable::mapping
