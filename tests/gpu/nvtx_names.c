/* tests/gpu/nvtx_names.c — NVTX names and payloads the trace formats must
 * carry intact: JSON-special characters, bytes that are not UTF-8, a name
 * longer than xsprof keeps whose cut falls inside a character, wide strings
 * with a lone surrogate, a thread name that is not UTF-8, and unsigned
 * 64-bit payloads past INT64_MAX. NVTX headers only (run with LD_PRELOAD);
 * check_nvtx_names.py checks the rank file and the merged outputs. */
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <wchar.h>

int main(void)
{
    nvtxRangePushA("json \"q\" \\ back\nnl\ttab \x01 ctl </script>");
    nvtxRangePop();
    nvtxRangePushA("bad utf8 \xff\xfe \xc3(");
    nvtxRangePop();
    nvtxRangePushA("overlong \xc0\xaf surrogate \xed\xa0\x80 end");
    nvtxRangePop();
    /* "x" then euro signs (3 bytes each): a cut at 1023 bytes falls after
     * 1022 bytes = "x" + 340 euros + 2 bytes of the next one. */
    static char longname[4001];
    longname[0] = 'x';
    for (int i = 1; i + 3 <= 4000; i += 3)
        memcpy(longname + i, "\xe2\x82\xac", 3);
    nvtxRangePushA(longname);
    nvtxRangePop();
    wchar_t wide[] = {L'w', L'i', L'd', L'e', L' ', 0xE9, 0xD800, 0x1F600, 0x110000, 0};
    nvtxRangePushW(wide);
    nvtxRangePop();
    nvtxMarkA("mark \xff");
    nvtxNameOsThreadA((uint32_t)syscall(SYS_gettid), "main \xff thread");

    nvtxDomainHandle_t d = nvtxDomainCreateA("dom\xff");
    nvtxEventAttributes_t a;
    memset(&a, 0, sizeof a);
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    a.message.registered = nvtxDomainRegisterStringA(d, "registered \"quoted\"");
    a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
    a.payload.ullValue = 18446744073709551615ull;
    nvtxDomainRangePushEx(d, &a);
    nvtxDomainRangePop(d);
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = "u64_small";
    a.payload.ullValue = 9223372036854775807ull;
    nvtxDomainRangePushEx(d, &a);
    nvtxDomainRangePop(d);
    a.message.ascii = "i64_min";
    a.payloadType = NVTX_PAYLOAD_TYPE_INT64;
    a.payload.llValue = -9223372036854775807ll - 1;
    nvtxDomainRangePushEx(d, &a);
    nvtxDomainRangePop(d);
    printf("nvtx_names done\n");
    return 0;
}
