# arm-none-eabi-gcc for a bare-metal Cortex-M (this project's own toolchain file).
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR arm)
set(CMAKE_C_COMPILER arm-none-eabi-gcc)
set(CMAKE_CXX_COMPILER arm-none-eabi-g++)
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)
set(APP_MCU_FLAGS "-mcpu=cortex-m7 -mthumb -mfpu=fpv5-d16 -mfloat-abi=hard" CACHE STRING "core flags")
set(CMAKE_C_FLAGS_INIT "${APP_MCU_FLAGS} -ffunction-sections -fdata-sections -Wall -Wextra -Werror")
set(CMAKE_CXX_FLAGS_INIT
    "${APP_MCU_FLAGS} -ffunction-sections -fdata-sections -fno-exceptions -fno-rtti -Wall -Wextra -Werror -pedantic")
set(CMAKE_EXE_LINKER_FLAGS_INIT "${APP_MCU_FLAGS} -nostartfiles --specs=nano.specs --specs=nosys.specs")
