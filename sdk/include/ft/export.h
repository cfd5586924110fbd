// FT_API marks the SDK's classes as exported from libftsdk, so their type identity is one
// across the host and every plugin (plugins compile with hidden visibility).
#pragma once

#define FT_API __attribute__((visibility("default")))
