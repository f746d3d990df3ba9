/* cmd_version — `fracgpu version`: the release and the libraries it was built against. */
#include <curl/curl.h>
#include <event2/event.h>
#include <json-c/json.h>
#include <openssl/opensslv.h>
#include <stdio.h>
#include <yaml.h>

#include "operator/commands.h"

int fg_cmd_version(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    printf("fracgpu %s (libcurl %s, json-c %s, libyaml %s, %s, libevent %s)\n", FG_VERSION,
           curl_version_info(CURLVERSION_NOW)->version, json_c_version(), yaml_get_version_string(),
           OPENSSL_VERSION_TEXT, event_get_version());
    return 0;
}
