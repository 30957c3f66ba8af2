// cxx_check.cpp - the exported headers from C++17: they compile there and their functions link with
// C names (extern "C"); main.c calls this once.
#include "app_models.h"

#define APP_CXX_CHECK(name)                                                                          \
    if (name##_error_string(0) == nullptr || name##_input(1000u) != nullptr) {                        \
        return 1;                                                                                    \
    }

extern "C" int app_cxx_check(void)
{
    APP_EACH_MODEL(APP_CXX_CHECK)
    return 0;
}
