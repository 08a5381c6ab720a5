/* Opens (or creates) a table, writes, reads and closes it:
 *   ./example DIR */
#include <roundtable/c.h>

#include <stdio.h>

int main(int argc, char** argv) {
  const char* dir = argc > 1 ? argv[1] : "example_table";
  rt_table* table = NULL;
  char* err = NULL;
  if (rt_open(NULL, dir, &table, &err) != RT_OK) {
    fprintf(stderr, "open: %s\n", err);
    rt_free(err);
    return 1;
  }
  rt_put(table, NULL, "alice", 5, "42", 2, &err);
  char value[64];
  size_t length = 0;
  int code = rt_get(table, "alice", 5, value, sizeof value, &length, &err);
  if (code == RT_OK) printf("alice = %.*s\n", (int)length, value);
  code = rt_get(table, "carol", 5, value, sizeof value, &length, &err);
  printf("carol: %s\n", rt_code_name(code));
  rt_free(err);
  err = NULL;
  code = rt_close(table, &err);
  rt_table_destroy(table);
  printf("roundtable %s\n", rt_version());
  return code == RT_OK ? 0 : 1;
}
