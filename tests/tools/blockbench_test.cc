// blockbench as a user runs it: a short run on a small file prints the JSON
// fields scripts rely on, creates and fills the file, and bad flags fail with
// a message.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"

namespace {

struct Outcome {
  int exit_code = -1;
  std::string out, err;
};

std::string Slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

Outcome RunBench(const std::string& args) {
  const std::string base =
      testing::TempDir() + "/blockbench_" + std::to_string(getpid());
  const std::string command = std::string(RT_BLOCKBENCH_PATH) + " " + args +
                              " >" + base + ".out 2>" + base + ".err";
  const int status = std::system(command.c_str());
  Outcome o;
  if (WIFEXITED(status)) o.exit_code = WEXITSTATUS(status);
  o.out = Slurp(base + ".out");
  o.err = Slurp(base + ".err");
  return o;
}

std::string DataFile() {
  return testing::TempDir() + "/blockbench_data_" + std::to_string(getpid());
}

TEST(BlockbenchTest, JsonRunCreatesAndFillsTheFile) {
  const std::string file = DataFile();
  unlink(file.c_str());
  for (const std::string pattern :
       {"randread", "randwrite", "read", "write", "randrw"}) {
    for (const std::string qd : {"1", "8"}) {
      const Outcome o =
          RunBench("--file=" + file + " --size=2M --pattern=" + pattern +
                   " --qd=" + qd + " --count=256 --seconds=5 --json");
      ASSERT_EQ(o.exit_code, 0) << pattern << " qd " << qd << ": " << o.err;
      for (const char* field :
           {"\"iops\":", "\"mib_per_s\":", "\"p50_us\":", "\"p99_us\":",
            "\"p999_us\":", "\"block_size\":4096", "\"backend\":"}) {
        EXPECT_NE(o.out.find(field), std::string::npos)
            << field << " missing in " << o.out;
      }
      EXPECT_NE(o.out.find("\"pattern\":\"" + pattern + "\""),
                std::string::npos)
          << o.out;
      EXPECT_NE(o.out.find("\"qd\":" + qd), std::string::npos) << o.out;
    }
  }
  struct stat st;
  ASSERT_EQ(stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 2 << 20);
  unlink(file.c_str());
}

TEST(BlockbenchTest, BadFlagsFailWithAMessage) {
  const std::string file = DataFile();
  struct Bad {
    std::string args, says;
  };
  for (const Bad& bad : std::vector<Bad>{
           {"--size=1M", "--file is required"},
           {"--file=" + file + " --size=12Q", "--size"},
           {"--file=" + file + " --size=1M --pattern=zigzag", "--pattern"},
           {"--file=" + file + " --size=1M --backend=zfs", "backend"},
           {"--file=" + file + " --size=1M --block_size=1000", "block size"},
           {"--file=" + file + " --size=1M --qd=0", "--qd"},
           {"--file=/nonexistent/dir/f --size=1M", "/nonexistent/dir/f"},
       }) {
    const Outcome o = RunBench(bad.args + " --seconds=0.1");
    EXPECT_EQ(o.exit_code, 1) << bad.args;
    EXPECT_NE(o.err.find(bad.says), std::string::npos)
        << bad.args << "\nstderr: " << o.err;
  }
  unlink(file.c_str());
}

}  // namespace
