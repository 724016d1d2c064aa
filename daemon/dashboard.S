/* dashboard.S - embeds the bundled dashboard (build/web/index.html, made by web/build.mjs) in flamed,
 * so the installed daemon serves it with no files beside it. DASHBOARD_HTML is its path. */
	.section .rodata
	.global flamed_dashboard_html
	.global flamed_dashboard_html_end
	.balign 16
flamed_dashboard_html:
	.incbin DASHBOARD_HTML
flamed_dashboard_html_end:
	.byte 0
	.section .note.GNU-stack,"",@progbits
